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
    t.output = direct ? "logits" : b.fresh(node.name);
    t.value = [&node, &values](const std::string& op_name) { return layer_value(node, op_name, values); };
    tensor[i] = emit_layer(b, node, t);
    if (i != logits) continue;
    if (options.float16) {
      OnnxBuilder::attr(b.node("Cast", {tensor[i]}, {"logits"}, "logits/Cast"), "to",
                        int64_t{onnx::TensorProto::FLOAT});
    } else if (tensor[i] != "logits") {  // the logits layer is an identity (dropout)
      b.node("Identity", {tensor[i]}, {"logits"}, "logits/Identity");
    }
  }
  set_batched_type(g->add_output(), "logits", onnx::TensorProto::FLOAT, {plan.num_classes()});
  return model;
}

}  // namespace fastnn::onnx_export
