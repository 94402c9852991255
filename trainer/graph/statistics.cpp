#include "trainer/graph/statistics.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace fastnn::graph {

std::string group_thousands(int64_t n) {
  const bool neg = n < 0;
  std::string digits = std::to_string(neg ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return neg ? "-" + out : out;
}

ModelStatistics model_statistics(const NetPlan& plan) {
  ModelStatistics s;
  s.net_name = plan.net_name();
  s.input = Shape(plan.input_shape().begin() + 1, plan.input_shape().end());
  const int64_t batch = plan.batch_size();
  for (const PlanNode& node : plan.nodes()) {
    LayerRow row{node.name, node.type, Shape(node.output_shape.begin() + 1, node.output_shape.end()),
                 node.trainable_params(), 2 * node.macs / batch};
    for (const PlannedTensor& p : node.params)
      if (p.trainable) s.params.push_back({p.name, p.spec.shape, p.numel()});
    for (const PlannedTensor& st : node.state) s.state.push_back({st.name, st.spec.shape, st.numel()});
    s.trainable_params += row.params;
    s.flops += row.flops;
    s.layers.push_back(std::move(row));
  }
  for (const ParamRow& r : s.state) s.state_elements += r.count;
  return s;
}

ModelStatistics model_statistics(const NetDef& net) { return model_statistics(NetPlan::make(net, PlanOptions{})); }

namespace {

std::string dims(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += str(i ? "x" : "", s[i]);
  return out;
}

std::string si(int64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2f G", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.2f K", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

void pad_to(std::ostringstream& os, const std::string& s, size_t width, bool right) {
  const std::string fill(width > s.size() ? width - s.size() : 0, ' ');
  os << (right ? fill + s : s + fill);
}

}  // namespace

std::string format_model_statistics(const ModelStatistics& s) {
  std::ostringstream os;
  size_t name_w = 5, shape_w = 5, type_w = 4, out_w = 6;
  for (const ParamRow& r : s.params) {
    name_w = std::max(name_w, r.name.size());
    shape_w = std::max(shape_w, shape_str(r.shape).size());
  }
  for (const LayerRow& r : s.layers) {
    name_w = std::max(name_w, r.name.size());
    type_w = std::max(type_w, r.type.size());
    out_w = std::max(out_w, dims(r.output).size());
  }
  const std::string title = s.net_name.empty() ? "the net" : s.net_name;
  os << "Trainable parameters of " << title << " (input " << dims(s.input) << "):\n  ";
  pad_to(os, "name", name_w + 2, false);
  pad_to(os, "shape", shape_w + 2, false);
  pad_to(os, "count", 12, true);
  os << "\n";
  for (const ParamRow& r : s.params) {
    os << "  ";
    pad_to(os, r.name, name_w + 2, false);
    pad_to(os, shape_str(r.shape), shape_w + 2, false);
    pad_to(os, group_thousands(r.count), 12, true);
    os << "\n";
  }
  os << "  ";
  pad_to(os, "total", name_w + 2, false);
  pad_to(os, str(s.params.size(), " tensors"), shape_w + 2, false);
  pad_to(os, group_thousands(s.trainable_params), 12, true);
  os << "  (" << si(s.trainable_params) << ")\n";
  os << "Non-trainable state (moving statistics): " << group_thousands(s.state_elements) << " in " << s.state.size()
     << " tensors\n";
  os << "Layers (FLOPs per example = 2 x multiply-adds of conv and fully connected layers):\n  ";
  pad_to(os, "layer", name_w + 2, false);
  pad_to(os, "type", type_w + 2, false);
  pad_to(os, "output", out_w + 2, false);
  pad_to(os, "params", 12, true);
  pad_to(os, "FLOPs", 18, true);
  os << "\n";
  for (const LayerRow& r : s.layers) {
    os << "  ";
    pad_to(os, r.name, name_w + 2, false);
    pad_to(os, r.type, type_w + 2, false);
    pad_to(os, dims(r.output), out_w + 2, false);
    pad_to(os, group_thousands(r.params), 12, true);
    pad_to(os, group_thousands(r.flops), 18, true);
    os << "\n";
  }
  os << "Total: " << group_thousands(s.trainable_params) << " trainable parameters (" << si(s.trainable_params)
     << "), " << group_thousands(s.flops) << " FLOPs per example (" << si(s.flops) << "FLOPs), " << s.layers.size()
     << " layers\n";
  return os.str();
}

}  // namespace fastnn::graph
