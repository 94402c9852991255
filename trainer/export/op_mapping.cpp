#include "trainer/export/op_mapping.h"

#include <algorithm>

#include "core/check.h"
#include "trainer/ops/window2d.h"

namespace fastnn::onnx_export {
namespace {

using ops::Attrs;

struct Emit {
  OnnxBuilder& b;
  const std::string& op;  // one fastnn op (a part of a fused name)
  const Attrs& a;
  const std::string& layer;
  const LayerTensors& t;
  std::string in;  // the op's first input
  Shape in_shape;
  std::string out;
  bool first = true;  // the first op of a (fused) layer: its node writing `out` is named after the layer

  // The layer's param / state tensor by the op's name, as an initializer under its full name.
  std::string param(const std::string& op_name) const {
    const LayerTensors::Value v = t.value(op_name);
    return b.initializer(v.name, v.shape, v.values);
  }
  std::string temp(const std::string& what) const { return b.fresh(layer + "/" + what); }
  onnx::NodeProto& node(const std::string& onnx_op, const std::vector<std::string>& inputs, const std::string& output) {
    return b.node(onnx_op, inputs, {output}, first && output == out ? layer : layer + "/" + onnx_op);
  }
};

void window_attrs(onnx::NodeProto& n, const ops::Window2d& w, bool dilation) {
  OnnxBuilder::attr(n, "kernel_shape", std::vector<int64_t>{w.r, w.s});
  OnnxBuilder::attr(n, "strides", std::vector<int64_t>{w.stride_h, w.stride_w});
  // ONNX order: x1_begin, x2_begin, x1_end, x2_end.
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{w.pad_top, w.pad_left, w.pad_bottom, w.pad_right});
  if (dilation) OnnxBuilder::attr(n, "dilations", std::vector<int64_t>{w.dil_h, w.dil_w});
}

void conv(Emit& e, bool depthwise) {
  const Shape& x = e.in_shape;
  FASTNN_CHECK(x.size() == 4, e.layer, ": conv input rank ", x.size());
  const ops::Window2d w = ops::parse_window2d(e.op, e.a, x[2], x[3], true, false);
  const int64_t group = depthwise ? x[1] : e.a.get_int(e.op, "groups", 1);
  std::vector<std::string> in = {e.in, e.param("weight")};
  if (e.a.get_bool(e.op, "bias", true)) in.push_back(e.param("bias"));
  onnx::NodeProto& n = e.node("Conv", in, e.out);
  window_attrs(n, w, true);
  OnnxBuilder::attr(n, "group", group);
}

void pool(Emit& e, bool avg) {
  const Shape& x = e.in_shape;
  const ops::Window2d w = ops::parse_window2d(e.op, e.a, x[2], x[3], false, true);
  onnx::NodeProto& n = e.node(avg ? "AveragePool" : "MaxPool", {e.in}, e.out);
  window_attrs(n, w, false);
  if (avg) OnnxBuilder::attr(n, "count_include_pad", int64_t{e.a.get_bool(e.op, "count_include_pad", false)});
}

void batch_norm(Emit& e) {
  onnx::NodeProto& n = e.node("BatchNormalization",
                              {e.in, e.param("gamma"), e.param("beta"), e.param("running_mean"), e.param("running_var")},
                              e.out);
  OnnxBuilder::attr(n, "epsilon", static_cast<float>(e.a.get_float(e.op, "epsilon", 1e-5)));
}

void fully_connected(Emit& e) {
  std::string flat = e.in;
  if (e.in_shape.size() != 2) {
    flat = e.temp("Flatten");
    OnnxBuilder::attr(e.node("Flatten", {e.in}, flat), "axis", int64_t{1});
  }
  std::vector<std::string> in = {flat, e.param("weight")};
  if (e.a.get_bool(e.op, "bias", true)) in.push_back(e.param("bias"));
  OnnxBuilder::attr(e.node("Gemm", in, e.out), "transB", int64_t{1});
}

void tanh(Emit& e) {
  const double inner = e.a.get_float(e.op, "inner", 1), outer = e.a.get_float(e.op, "outer", 1);
  std::string x = e.in;
  if (inner != 1) {
    const std::string y = e.temp("inner");
    e.node("Mul", {x, e.b.scalar(e.layer + "/inner_factor", static_cast<float>(inner))}, y);
    x = y;
  }
  if (outer == 1) {
    e.node("Tanh", {x}, e.out);
    return;
  }
  const std::string y = e.temp("Tanh");
  e.node("Tanh", {x}, y);
  e.node("Mul", {y, e.b.scalar(e.layer + "/outer_factor", static_cast<float>(outer))}, e.out);
}

void lrn(Emit& e) {
  const int64_t r = e.a.get_int(e.op, "depth_radius", 5), size = 2 * r + 1;
  onnx::NodeProto& n = e.node("LRN", {e.in}, e.out);
  OnnxBuilder::attr(n, "size", size);
  OnnxBuilder::attr(n, "alpha", static_cast<float>(e.a.get_float(e.op, "alpha", 1) * static_cast<double>(size)));
  OnnxBuilder::attr(n, "beta", static_cast<float>(e.a.get_float(e.op, "beta", 0.5)));
  OnnxBuilder::attr(n, "bias", static_cast<float>(e.a.get_float(e.op, "bias", 1)));
}

// Pad with negative begin pads crops: [-dy, -dx] at the start and [dy, dx] at the end of H and W.
void spatial_shift(Emit& e) {
  const int64_t dy = e.a.get_int(e.op, "dy", 1), dx = e.a.get_int(e.op, "dx", 1);
  e.node("Pad", {e.in, e.b.int64s(e.layer + "/pads", {0, 0, -dy, -dx, 0, 0, dy, dx})}, e.out);
}

void channel_pad(Emit& e) {
  const size_t rank = e.in_shape.size();
  std::vector<int64_t> pads(2 * rank, 0);
  pads[1] = e.a.get_int(e.op, "before", 0);
  pads[rank + 1] = e.a.get_int(e.op, "after", 0);
  e.node("Pad", {e.in, e.b.int64s(e.layer + "/pads", pads)}, e.out);
}

// One fastnn op into e.out. Returns e.out, or the input for an identity.
std::string emit_op(Emit& e) {
  const std::string& op = e.op;
  if (op == "conv2d") conv(e, false);
  else if (op == "depthwise_conv2d") conv(e, true);
  else if (op == "batch_norm") batch_norm(e);
  else if (op == "relu") e.node("Relu", {e.in}, e.out);
  else if (op == "relu6") e.node("Clip", {e.in, e.b.scalar(e.layer + "/clip_min", 0), e.b.scalar(e.layer + "/clip_max", 6)}, e.out);
  else if (op == "hard_swish") e.node("HardSwish", {e.in}, e.out);
  else if (op == "tanh") tanh(e);
  else if (op == "max_pool2d") pool(e, false);
  else if (op == "avg_pool2d") pool(e, true);
  else if (op == "global_avg_pool") {
    const std::string pooled = e.temp("GlobalAveragePool");
    e.node("GlobalAveragePool", {e.in}, pooled);
    OnnxBuilder::attr(e.node("Flatten", {pooled}, e.out), "axis", int64_t{1});
  } else if (op == "fully_connected") fully_connected(e);
  else if (op == "dropout" || op == "drop_path") return e.in;
  else if (op == "add") {
    // Fused after a batch norm (batch_norm+add+relu): the batch norm's output and the layer's other input.
    std::vector<std::string> in = e.t.inputs;
    if (!e.first) in.front() = e.in;
    e.node(in.size() == 2 ? "Add" : "Sum", in, e.out);
  }
  else if (op == "concat") OnnxBuilder::attr(e.node("Concat", e.t.inputs, e.out), "axis", int64_t{1});
  else if (op == "scale")
    e.node("Mul", {e.in, e.b.scalar(e.layer + "/scale", static_cast<float>(e.a.get_float(op, "scale", 1)))}, e.out);
  else if (op == "channel_pad") channel_pad(e);
  else if (op == "lrn") lrn(e);
  else if (op == "spatial_shift") spatial_shift(e);
  else throw ConfigError(str("layer '", e.layer, "': op ", op, " has no ONNX mapping (exportable: ",
                             [] { std::string s; for (const std::string& o : exportable_ops()) s += (s.empty() ? "" : ", ") + o; return s; }(), ")"));
  return e.out;
}

}  // namespace

std::vector<std::string> exportable_ops() {
  std::vector<std::string> ops = {"conv2d", "depthwise_conv2d", "batch_norm", "relu",  "relu6", "hard_swish",
                                  "tanh",   "max_pool2d",       "avg_pool2d", "global_avg_pool",
                                  "fully_connected", "dropout", "add", "concat", "scale", "channel_pad", "lrn",
                                  "drop_path", "spatial_shift"};
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::string emit_layer(OnnxBuilder& b, const graph::PlanNode& node, const LayerTensors& t) {
  FASTNN_CHECK(!t.inputs.empty() && t.inputs.size() == t.input_shapes.size(), node.name, ": inputs");
  // A fused node "A+B": A on the layer's inputs with its attributes, then B (element-wise, no
  // attributes) on A's output (an add after a batch norm: with the layer's other input too).
  std::vector<std::string> parts;
  for (size_t s = 0, p; s <= node.op.size(); s = p + 1) {
    p = node.op.find('+', s);
    if (p == std::string::npos) p = node.op.size();
    parts.push_back(node.op.substr(s, p - s));
  }
  static const Attrs kNone;
  std::string x = t.inputs[0];
  Shape shape = t.input_shapes[0];
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    Emit e{b, parts[i], i == 0 ? node.attrs : kNone, node.name, t, x, shape,
           last ? t.output : b.fresh(node.name + "/" + parts[i]), i == 0};
    x = emit_op(e);
    shape = node.output_shape;  // fused tails are element-wise
  }
  return x;
}

}  // namespace fastnn::onnx_export
