#include "trainer/export/onnx_model.h"

#include "core/check.h"
#include "trainer/export/onnx_builder.h"
#include "trainer/export/op_mapping.h"
#include "trainer/ops/init.h"

namespace fastnn::onnx_export {
namespace {

// The layers the logits depend on.
std::vector<bool> needed_nodes(const graph::NetPlan& plan) {
  const auto& nodes = plan.nodes();
  std::vector<bool> need(nodes.size(), false);
  need[static_cast<size_t>(plan.logits_node())] = true;
  for (size_t i = nodes.size(); i-- > 0;)  // topological order: readers come after what they read
    if (need[i])
      for (int p : nodes[i].inputs)
        if (p != graph::kDataInput) need[static_cast<size_t>(p)] = true;
  return need;
}

// A param the graph does not train or save (BN's disabled gamma / beta): its constant initial value.
std::vector<float> fixed_value(const graph::PlannedTensor& t) {
  Tensor v = Tensor::zeros(t.spec.shape);
  if (t.init) ops::init_tensor(v, *t.init, t.spec.fan_in, t.spec.fan_out, 0);
  else ops::init_tensor(v, t.spec, 0);
  return std::vector<float>(v.data<float>(), v.data<float>() + v.numel());
}

LayerTensors::Value layer_value(const graph::PlanNode& node, const std::string& op_name, const ValueSource& values) {
  const ops::OpSignature& sig = node.kernel->signature();
  auto pick = [&](const std::vector<ops::TensorSpec>& specs,
                  const std::vector<graph::PlannedTensor>& planned) -> const graph::PlannedTensor* {
    for (size_t k = 0; k < specs.size() && k < planned.size(); ++k)
      if (specs[k].name == op_name) return &planned[k];
    return nullptr;
  };
  const graph::PlannedTensor* t = pick(sig.params, node.params);
  const bool is_param = t != nullptr;
  if (!t) t = pick(sig.state, node.state);
  FASTNN_CHECK(t, "layer '", node.name, "' (", node.op, ") has no tensor '", op_name, "'");
  std::vector<float> v = is_param && !t->trainable ? fixed_value(*t) : values(*t);
  if (static_cast<int64_t>(v.size()) != t->numel())
    throw Error(str(t->name, ": ", v.size(), " values for shape ", shape_str(t->spec.shape)));
  return {t->name, t->spec.shape, std::move(v)};
}

// The head's logits from the embedding `emb` (elem type) into a new tensor; returns its name.
std::string emit_head(OnnxBuilder& b, const std::string& emb, const ExportedHead& h) {
  std::string x = emb;
  if (h.normalized) {  // x / max(|x|, eps): a zero embedding has cosine 0 with every class, as in predict
    const std::string norm = b.fresh("head/norm");
    OnnxBuilder::attr(b.node("ReduceL2", {emb}, {norm}, "head/ReduceL2"), "axes", std::vector<int64_t>{1});
    const float eps = b.elem() == onnx::TensorProto::FLOAT16 ? 1e-7f : 1e-12f;
    const std::string safe = b.fresh("head/norm_safe");
    b.node("Max", {norm, b.scalar("head/eps", eps)}, {safe}, "head/Max");
    x = b.fresh("head/normalized");
    b.node("Div", {emb, safe}, {x}, "head/Div");
  }
  const std::string rows = b.initializer("Head/weights", {h.classes, h.emb_dim}, h.rows);
  std::string z = b.fresh("head/scores");
  OnnxBuilder::attr(b.node("Gemm", {x, rows}, {z}, "head/Gemm"), "transB", int64_t{1});
  if (!h.normalized) return z;
  const std::string clipped = b.fresh("head/cosine");
  b.node("Clip", {z, b.scalar("head/min", -1.0f), b.scalar("head/max", 1.0f)}, {clipped}, "head/Clip");
  const std::string scaled = b.fresh("head/logits");
  b.node("Mul", {clipped, b.scalar("head/scale", h.scale)}, {scaled}, "head/Mul");
  return scaled;
}

}  // namespace

onnx::ModelProto build_onnx_model(const graph::NetPlan& plan, const ValueSource& values, const ModelOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(kOnnxIrVersion);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  model.set_producer_name("fastnn");
  model.set_producer_version(options.producer_version);
  if (!options.doc.empty()) model.set_doc_string(options.doc);
  for (const auto& [k, v] : options.metadata) {
    onnx::StringStringEntryProto* e = model.add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  }
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(plan.net_name().empty() ? "fastnn" : plan.net_name());
  const int32_t elem = options.float16 ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT;
  OnnxBuilder b(g, elem);
  b.reserve("images");
  b.reserve("logits");
  // The net's output: the logits, or an embedding model's embedding (its head adds the logits).
  const std::string net_out = options.head ? "embedding" : "logits";
  if (options.head) b.reserve(net_out);

  const Shape& in = plan.input_shape();
  set_batched_type(g->add_input(), "images", onnx::TensorProto::FLOAT, {in[1], in[2], in[3]});
  std::string data = "images";
  if (options.float16) {
    data = b.fresh("images_f16");
    OnnxBuilder::attr(b.node("Cast", {"images"}, {data}, "images/Cast"), "to", int64_t{elem});
  }

  const auto& nodes = plan.nodes();
  const std::vector<bool> need = needed_nodes(plan);
  std::vector<std::string> tensor(nodes.size());
  const auto logits = static_cast<size_t>(plan.logits_node());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!need[i]) continue;
    const graph::PlanNode& node = nodes[i];
    LayerTensors t;
    for (int p : node.inputs) {
      t.inputs.push_back(p == graph::kDataInput ? data : tensor[static_cast<size_t>(p)]);
      t.input_shapes.push_back(p == graph::kDataInput ? in : nodes[static_cast<size_t>(p)].output_shape);
    }
    const bool direct = i == logits && !options.float16;
    t.output = direct ? net_out : b.fresh(node.name);
    t.value = [&node, &values](const std::string& op_name) { return layer_value(node, op_name, values); };
    tensor[i] = emit_layer(b, node, t);
  }
  const auto to_output = [&](const std::string& from, const std::string& out) {
    if (options.float16) {
      OnnxBuilder::attr(b.node("Cast", {from}, {out}, out + "/Cast"), "to", int64_t{onnx::TensorProto::FLOAT});
    } else if (from != out) {  // the last layer is an identity (dropout), or the embedding feeds the head
      b.node("Identity", {from}, {out}, out + "/Identity");
    }
  };
  if (options.head) {
    FASTNN_CHECK(options.head->emb_dim == plan.num_classes(), "onnx export: the head takes ", options.head->emb_dim,
                 " features, the net gives ", plan.num_classes());
    to_output(emit_head(b, tensor[logits], *options.head), "logits");
    set_batched_type(g->add_output(), "logits", onnx::TensorProto::FLOAT, {options.head->classes});
  }
  to_output(tensor[logits], net_out);
  set_batched_type(g->add_output(), net_out, onnx::TensorProto::FLOAT, {plan.num_classes()});
  return model;
}

}  // namespace fastnn::onnx_export
