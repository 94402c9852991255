#include "trainer/optim/optimizer.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/check.h"

namespace fastnn {

Optimizer::Optimizer(std::string name, std::vector<ParamRef> params)
    : name_(std::move(name)), params_(std::move(params)) {
  std::set<std::string_view> seen;
  for (const ParamRef& p : params_) {
    FASTNN_CHECK(!p.name.empty(), "optimizer ", name_, ": a parameter has an empty name");
    FASTNN_CHECK(seen.insert(p.name).second, "optimizer ", name_, ": parameter name '", p.name,
                 "' appears twice");
    FASTNN_CHECK(p.count == 0 || (p.value != nullptr && p.grad != nullptr), "optimizer ", name_,
                 ": parameter '", p.name, "' has a null value or gradient buffer");
  }
}

size_t Optimizer::add_slot(const std::string& slot_name, float init) {
  Slot s;
  s.name = slot_name;
  s.data.reserve(params_.size());
  for (const ParamRef& p : params_) s.data.emplace_back(p.count, init);
  slots_.push_back(std::move(s));
  return slots_.size() - 1;
}

float* Optimizer::add_scalar(const std::string& scalar_name, float init) {
  scalars_.emplace_back(name_ + "/" + scalar_name, init);
  return &scalars_.back().second;
}

void Optimizer::step(float lr) {
  begin_step(lr);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].count > 0) update(i, lr);
  }
  end_step();
}

void Optimizer::step_rows(float lr, std::span<const int64_t> rows, int64_t row_len, const float* compact_grad) {
  FASTNN_CHECK(params_.size() == 1, "step_rows: the optimizer has ", params_.size(), " parameters, not one");
  FASTNN_CHECK(row_len > 0 && (rows.empty() || compact_grad), "step_rows: bad row length or gradient");
  const auto total_rows = static_cast<int64_t>(params_[0].count) / row_len;
  for (size_t j = 0; j < rows.size(); ++j)
    FASTNN_CHECK(rows[j] >= 0 && rows[j] < total_rows && (j == 0 || rows[j] > rows[j - 1]), "step_rows: row ",
                 rows[j], " out of order or outside 0..", total_rows - 1);
  const RowSelection sel{rows, row_len, compact_grad};
  rows_ = &sel;
  try {
    step(lr);
  } catch (...) {
    rows_ = nullptr;
    throw;
  }
  rows_ = nullptr;
}

std::vector<StateArray> Optimizer::state() {
  std::vector<StateArray> out;
  for (size_t p = 0; p < params_.size(); ++p) {
    for (Slot& s : slots_) {
      out.push_back({params_[p].name + "/" + s.name, s.data[p].data(), s.data[p].size()});
    }
  }
  for (auto& [scalar_name, value] : scalars_) out.push_back({scalar_name, &value, 1});
  return out;
}

std::vector<NamedArray> Optimizer::export_state() const {
  // Same names and order as state().
  std::vector<NamedArray> out;
  for (size_t p = 0; p < params_.size(); ++p) {
    for (const Slot& s : slots_) out.push_back({params_[p].name + "/" + s.name, s.data[p]});
  }
  for (const auto& [scalar_name, value] : scalars_) out.push_back({scalar_name, {value}});
  return out;
}

void Optimizer::import_state(const std::vector<NamedArray>& arrays) {
  std::map<std::string_view, const NamedArray*> by_name;
  for (const NamedArray& a : arrays) {
    if (!by_name.emplace(a.name, &a).second) {
      throw FormatError(str("optimizer ", name_, " state: array '", a.name, "' given twice"));
    }
  }
  std::vector<StateArray> views = state();
  // Check everything before writing anything, so a failed import leaves the state unchanged.
  for (const StateArray& v : views) {
    auto it = by_name.find(v.name);
    if (it == by_name.end()) {
      throw FormatError(str("optimizer ", name_, " state: array '", v.name,
                            "' is missing (was the checkpoint written with another optimizer?)"));
    }
    if (it->second->data.size() != v.count) {
      throw FormatError(str("optimizer ", name_, " state: array '", v.name, "' has ",
                            it->second->data.size(), " floats, expected ", v.count));
    }
  }
  if (arrays.size() != views.size()) {
    std::set<std::string_view> known;
    for (const StateArray& v : views) known.insert(v.name);
    for (const NamedArray& a : arrays) {
      if (!known.count(a.name)) {
        throw FormatError(str("optimizer ", name_, " state: unknown array '", a.name, "'"));
      }
    }
  }
  for (const StateArray& v : views) {
    const std::vector<float>& src = by_name[v.name]->data;
    std::copy(src.begin(), src.end(), v.data);
  }
}

}  // namespace fastnn
