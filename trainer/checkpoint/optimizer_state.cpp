// Optimizer state <-> checkpoint arrays.
#include "trainer/checkpoint/optimizer_state.h"

#include "core/check.h"

namespace fastnn::checkpoint {

std::vector<ArrayView> optimizer_state_views(const std::vector<NamedArray>& state) {
  std::vector<ArrayView> out;
  out.reserve(state.size());
  for (const auto& s : state)
    out.push_back(f32_view(s.name, {static_cast<int64_t>(s.data.size())}, s.data.data(), s.data.size()));
  return out;
}

std::vector<NamedArray> optimizer_state_from(const SafetensorsFile& file) {
  std::vector<NamedArray> out;
  out.reserve(file.arrays().size());
  for (const auto& a : file.arrays()) {
    try {
      out.push_back({a.name, to_f32(a)});
    } catch (const FormatError& e) {
      throw FormatError(str(file.name(), ": ", e.what()));
    }
  }
  return out;
}

}  // namespace fastnn::checkpoint
