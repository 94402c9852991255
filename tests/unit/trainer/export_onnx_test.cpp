// The ONNX exporter (trainer/export/): graphs of small nets checked node by node (op types, attributes
// such as TF "same" padding as asymmetric pads and LRN's alpha, initializer shapes and values),
// fused plans, float16, pruning of an auxiliary head, external data files, and the op table against
// the op registry. Numerical agreement with fastnn is tests/integration/export_onnx.sh's job.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "graph_test_util.h"
#include "trainer/export/onnx_file.h"
#include "trainer/export/onnx_model.h"
#include "trainer/export/op_mapping.h"
#include "trainer/graph/net_plan.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

using testing_util::net_from_text;

// Values that identify their tensor: element i of a tensor whose name hashes to h is h * 1e-3 + i * 1e-6.
std::vector<float> value_of(const graph::PlannedTensor& t) {
  const float h = static_cast<float>(std::hash<std::string>{}(t.name) % 997);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = h * 1e-3f + static_cast<float>(i) * 1e-6f;
  return v;
}

onnx::ModelProto export_net(const NetDef& net, bool fuse = false, bool f16 = false) {
  const graph::NetPlan plan = graph::NetPlan::make(net, {.batch_size = 2, .fuse = fuse});
  return onnx_export::build_onnx_model(plan, value_of, {.float16 = f16, .producer_version = "test"});
}

const onnx::NodeProto* node_named(const onnx::ModelProto& m, const std::string& name) {
  for (const onnx::NodeProto& n : m.graph().node())
    if (n.name() == name) return &n;
  return nullptr;
}
const onnx::TensorProto* init_named(const onnx::ModelProto& m, const std::string& name) {
  for (const onnx::TensorProto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}
const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& key) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == key) return &a;
  return nullptr;
}
std::vector<int64_t> ints(const onnx::NodeProto& n, const std::string& key) {
  const onnx::AttributeProto* a = attr(n, key);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}
std::vector<int64_t> dims(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }
std::vector<float> floats(const onnx::TensorProto& t) {
  std::vector<float> v(t.raw_data().size() / 4);
  std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
  return v;
}
std::map<std::string, int> op_counts(const onnx::ModelProto& m) {
  std::map<std::string, int> c;
  for (const onnx::NodeProto& n : m.graph().node()) ++c[n.op_type()];
  return c;
}

// Every layer type, on an 8x8 input so that TF "same" with stride 2 pads asymmetrically.
const char* kEveryLayer = R"(
  name: "every"
  input { channels: 3 height: 8 width: 8 }
  layers { name: "conv1" inputs: "data" conv { filters: 4 kernel: 3 stride: 2 padding: "same" } }
  layers { name: "bn1" inputs: "conv1" batch_norm { scale: false epsilon: 0.001 } }
  layers { name: "relu1" inputs: "bn1" relu {} }
  layers { name: "dw" inputs: "relu1" depthwise_conv { kernel: 3 padding: "same" multiplier: 2 bias: false } }
  layers { name: "r6" inputs: "dw" relu6 {} }
  layers { name: "hs" inputs: "r6" hard_swish {} }
  layers { name: "lrn" inputs: "hs" lrn { depth_radius: 2 alpha: 0.5 beta: 0.75 bias: 2 } }
  layers { name: "avg" inputs: "lrn" pool { kind: AVG kernel: 3 stride: 1 padding: "same" } }
  layers { name: "max" inputs: "lrn" pool { kind: MAX kernel: 3 stride: 1 pad: [1, 1, 1, 1] } }
  layers { name: "cat" inputs: "avg" inputs: "max" concat {} }
  layers { name: "cpad" inputs: "r6" channel_pad { before: 3 after: 5 } }
  layers { name: "half" inputs: "cat" scale { scale: 0.5 } }
  layers { name: "sum" inputs: "half" inputs: "cpad" inputs: "cat" add {} }
  layers { name: "th" inputs: "sum" tanh { outer: 1.7159 inner: 0.6667 } }
  layers { name: "gap" inputs: "th" global_avg_pool {} }
  layers { name: "drop" inputs: "gap" dropout { rate: 0.3 } }
  layers { name: "fc_gap" inputs: "drop" fully_connected { units: 5 } }
  layers { name: "fc_map" inputs: "th" fully_connected { units: 5 bias: false } }
  layers { name: "out" inputs: "fc_gap" inputs: "fc_map" add {} }
  logits: "out"
)";

TEST(ExportOnnx, EveryLayerTypeMapsToItsOnnxNodes) {
  const onnx::ModelProto m = export_net(net_from_text(kEveryLayer));
  EXPECT_EQ(m.ir_version(), 8);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  const std::map<std::string, int> want = {
      {"Conv", 2}, {"BatchNormalization", 1}, {"Relu", 1}, {"Clip", 1}, {"LRN", 1}, {"AveragePool", 1},
      {"MaxPool", 1}, {"Concat", 1}, {"Pad", 1}, {"Mul", 3}, {"Sum", 1}, {"Tanh", 1},
      {"GlobalAveragePool", 1}, {"Flatten", 2}, {"Gemm", 2}, {"Add", 1}, {"HardSwish", 1}};
  EXPECT_EQ(op_counts(m), want);  // no Dropout: evaluation mode's identity

  // TF "same", 8 -> 4 with k3 s2: one pixel of padding, at the bottom / right.
  const onnx::NodeProto* conv1 = node_named(m, "conv1");
  ASSERT_TRUE(conv1);
  EXPECT_EQ(ints(*conv1, "pads"), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(ints(*conv1, "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints(*conv1, "kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(conv1->input(0), "images");
  ASSERT_EQ(conv1->input_size(), 3);
  EXPECT_EQ(dims(*init_named(m, "conv1/weights")), (std::vector<int64_t>{4, 3, 3, 3}));

  // Depthwise: a grouped Conv with group = C, weight [C*M, 1, R, S], no bias input.
  const onnx::NodeProto* dw = node_named(m, "dw");
  ASSERT_TRUE(dw);
  EXPECT_EQ(attr(*dw, "group")->i(), 4);
  EXPECT_EQ(dw->input_size(), 2);
  EXPECT_EQ(dims(*init_named(m, "dw/depthwise_weights")), (std::vector<int64_t>{8, 1, 3, 3}));
  EXPECT_EQ(ints(*dw, "pads"), (std::vector<int64_t>{1, 1, 1, 1}));

  // BN in inference form; the disabled gamma is the constant 1, the rest are the source's values.
  const onnx::NodeProto* bn = node_named(m, "bn1");
  ASSERT_TRUE(bn);
  EXPECT_FLOAT_EQ(attr(*bn, "epsilon")->f(), 0.001f);
  ASSERT_EQ(bn->input_size(), 5);
  EXPECT_EQ(floats(*init_named(m, bn->input(1))), std::vector<float>(4, 1.0f));
  const onnx::TensorProto* mean = init_named(m, bn->input(3));
  ASSERT_TRUE(mean);
  EXPECT_EQ(mean->name(), "bn1/moving_mean");
  graph::PlannedTensor pt;
  pt.name = "bn1/moving_mean";
  pt.spec.shape = {4};
  EXPECT_EQ(floats(*mean), value_of(pt));

  // relu6 is Clip(0, 6) with scalar bounds.
  const onnx::NodeProto* r6 = node_named(m, "r6");
  ASSERT_TRUE(r6 && r6->op_type() == "Clip" && r6->input_size() == 3);
  EXPECT_EQ(floats(*init_named(m, r6->input(1))), std::vector<float>{0.0f});
  EXPECT_EQ(floats(*init_named(m, r6->input(2))), std::vector<float>{6.0f});
  EXPECT_TRUE(dims(*init_named(m, r6->input(1))).empty());

  // hard_swish is opset 14's HardSwish, the same formula, on relu6's output.
  const onnx::NodeProto* hs = node_named(m, "hs");
  ASSERT_TRUE(hs && hs->op_type() == "HardSwish" && hs->input_size() == 1);
  EXPECT_EQ(hs->input(0), "r6");

  // LRN: size 2r+1, alpha times the size (ONNX divides by it, TensorFlow does not).
  const onnx::NodeProto* lrn = node_named(m, "lrn");
  ASSERT_TRUE(lrn);
  EXPECT_EQ(attr(*lrn, "size")->i(), 5);
  EXPECT_FLOAT_EQ(attr(*lrn, "alpha")->f(), 2.5f);
  EXPECT_FLOAT_EQ(attr(*lrn, "beta")->f(), 0.75f);
  EXPECT_FLOAT_EQ(attr(*lrn, "bias")->f(), 2.0f);

  // Pools: TF divisor (count_include_pad 0) and explicit pads.
  const onnx::NodeProto* avg = node_named(m, "avg");
  ASSERT_TRUE(avg);
  EXPECT_EQ(attr(*avg, "count_include_pad")->i(), 0);
  EXPECT_EQ(ints(*avg, "pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(ints(*node_named(m, "max"), "strides"), (std::vector<int64_t>{1, 1}));

  // channel_pad: Pad along dim 1 only.
  const onnx::NodeProto* cpad = node_named(m, "cpad");
  ASSERT_TRUE(cpad && cpad->op_type() == "Pad");
  const onnx::TensorProto* pads = init_named(m, cpad->input(1));
  ASSERT_TRUE(pads && pads->data_type() == onnx::TensorProto::INT64);
  std::vector<int64_t> pv(8);
  ASSERT_EQ(pads->raw_data().size(), 64u);
  std::memcpy(pv.data(), pads->raw_data().data(), 64);
  EXPECT_EQ(pv, (std::vector<int64_t>{0, 3, 0, 0, 0, 5, 0, 0}));

  EXPECT_EQ(attr(*node_named(m, "cat"), "axis")->i(), 1);
  EXPECT_EQ(node_named(m, "sum")->input_size(), 3);
  EXPECT_EQ(floats(*init_named(m, node_named(m, "half")->input(1))), std::vector<float>{0.5f});
  // tanh: inner factor, Tanh, outer factor.
  EXPECT_EQ(floats(*init_named(m, "th/inner_factor")), std::vector<float>{0.6667f});
  EXPECT_EQ(floats(*init_named(m, "th/outer_factor")), std::vector<float>{1.7159f});

  // Dropout left out: fc_gap reads the pooled tensor through gap's Flatten.
  const onnx::NodeProto* fc_gap = node_named(m, "fc_gap");
  ASSERT_TRUE(fc_gap && fc_gap->op_type() == "Gemm");
  EXPECT_EQ(fc_gap->input(0), "gap");
  EXPECT_EQ(attr(*fc_gap, "transB")->i(), 1);
  // A 4-D input is flattened first; no bias, no third input.
  const onnx::NodeProto* fc_map = node_named(m, "fc_map");
  ASSERT_TRUE(fc_map && fc_map->input_size() == 2);
  EXPECT_EQ(dims(*init_named(m, "fc_map/weights")), (std::vector<int64_t>{5, 16 * 4 * 4}));
  EXPECT_EQ(node_named(m, "fc_map/Flatten")->output(0), fc_map->input(0));

  // Graph interface: images [batch, 3, 8, 8] float, logits [batch, 5].
  ASSERT_EQ(m.graph().input_size(), 1);
  const auto& in = m.graph().input(0).type().tensor_type();
  EXPECT_EQ(m.graph().input(0).name(), "images");
  EXPECT_EQ(in.elem_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(in.shape().dim_size(), 4);
  EXPECT_EQ(in.shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(in.shape().dim(3).dim_value(), 8);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "logits");
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 5);
  EXPECT_EQ(node_named(m, "out")->output(0), "logits");
}

TEST(ExportOnnx, TensorNamesAreAssignedOnce) {
  const onnx::ModelProto m = export_net(net_from_text(kEveryLayer));
  std::map<std::string, int> produced;
  for (const onnx::TensorProto& t : m.graph().initializer()) ++produced[t.name()];
  for (const onnx::NodeProto& n : m.graph().node())
    for (const std::string& o : n.output()) ++produced[o];
  ++produced["images"];
  for (const auto& [name, count] : produced) EXPECT_EQ(count, 1) << name;
  // Every node input is produced before it is read (topological order).
  std::map<std::string, bool> ready = {{"images", true}};
  for (const onnx::TensorProto& t : m.graph().initializer()) ready[t.name()] = true;
  for (const onnx::NodeProto& n : m.graph().node()) {
    for (const std::string& i : n.input()) EXPECT_TRUE(ready[i]) << n.name() << " reads " << i;
    for (const std::string& o : n.output()) ready[o] = true;
  }
}

TEST(ExportOnnx, FusedPlanExportsTheComposedOps) {
  const char* text = R"(
    input { channels: 2 height: 4 width: 4 }
    layers { name: "c" inputs: "data" conv { filters: 2 kernel: 1 } }
    layers { name: "bn" inputs: "c" batch_norm {} }
    layers { name: "r" inputs: "bn" relu {} }
    layers { name: "a" inputs: "r" inputs: "c" add {} }
    layers { name: "r2" inputs: "a" relu {} }
    layers { name: "fc" inputs: "r2" fully_connected { units: 3 } }
    logits: "fc")";
  const onnx::ModelProto fused = export_net(net_from_text(text), /*fuse=*/true);
  const onnx::ModelProto plain = export_net(net_from_text(text), /*fuse=*/false);
  EXPECT_EQ(op_counts(fused), op_counts(plain));
  const graph::NetPlan plan = graph::NetPlan::make(net_from_text(text), {.fuse = true});
  bool saw = false;
  for (const graph::PlanNode& n : plan.nodes()) saw |= n.op == "batch_norm+relu";
  ASSERT_TRUE(saw) << "the plan did not fuse; the test needs a fused node";
  // batch_norm+relu: BatchNormalization then Relu reading its output, the Relu writing the layer's tensor.
  const onnx::NodeProto* bn = node_named(fused, "bn");
  ASSERT_TRUE(bn && bn->op_type() == "BatchNormalization");
  const onnx::NodeProto* relu = node_named(fused, "bn/Relu");
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu->input(0), bn->output(0));
  EXPECT_EQ(relu->output(0), "bn");
}

// batch_norm+add+relu (a residual unit's end): BatchNormalization on the batch norm's input, Add of its
// output and the other addend, Relu writing the layer's tensor.
TEST(ExportOnnx, FusedResidualUnitExportsTheComposedOps) {
  const char* text = R"(
    input { channels: 2 height: 4 width: 4 }
    layers { name: "c" inputs: "data" conv { filters: 2 kernel: 1 } }
    layers { name: "c2" inputs: "c" conv { filters: 2 kernel: 1 } }
    layers { name: "bn" inputs: "c2" batch_norm { epsilon: 0.01 } }
    layers { name: "a" inputs: "c" inputs: "bn" add {} }
    layers { name: "r" inputs: "a" relu {} }
    layers { name: "fc" inputs: "r" fully_connected { units: 3 } }
    logits: "fc")";
  const graph::NetPlan plan = graph::NetPlan::make(net_from_text(text), {.fuse = true});
  bool saw = false;
  for (const graph::PlanNode& n : plan.nodes()) saw |= n.op == "batch_norm+add+relu";
  ASSERT_TRUE(saw) << "the plan did not fuse the residual unit";
  const onnx::ModelProto fused = export_net(net_from_text(text), /*fuse=*/true);
  const onnx::ModelProto plain = export_net(net_from_text(text), /*fuse=*/false);
  EXPECT_EQ(op_counts(fused), op_counts(plain));
  const onnx::NodeProto* bn = node_named(fused, "a");
  ASSERT_TRUE(bn && bn->op_type() == "BatchNormalization") << "the fused node is named after the add";
  bool epsilon = false;
  for (const onnx::AttributeProto& at : bn->attribute())
    if (at.name() == "epsilon") epsilon = std::fabs(at.f() - 0.01f) < 1e-9f;
  EXPECT_TRUE(epsilon) << "the batch norm's own epsilon";
  const onnx::NodeProto* add = node_named(fused, "a/Add");
  ASSERT_TRUE(add && add->op_type() == "Add");
  ASSERT_EQ(add->input_size(), 2);
  EXPECT_EQ(add->input(0), bn->output(0));
  EXPECT_EQ(add->input(1), "c");
  const onnx::NodeProto* relu = node_named(fused, "a/Relu");
  ASSERT_TRUE(relu && relu->op_type() == "Relu");
  EXPECT_EQ(relu->input(0), add->output(0));
  EXPECT_EQ(relu->output(0), "a");
}

TEST(ExportOnnx, Float16CastsAtTheEdges) {
  const onnx::ModelProto m = export_net(net_from_text(kEveryLayer), false, /*f16=*/true);
  const auto& nodes = m.graph().node();
  ASSERT_GE(nodes.size(), 2);
  EXPECT_EQ(nodes[0].op_type(), "Cast");
  EXPECT_EQ(nodes[0].input(0), "images");
  EXPECT_EQ(attr(nodes[0], "to")->i(), onnx::TensorProto::FLOAT16);
  const onnx::NodeProto& last = nodes[nodes.size() - 1];
  EXPECT_EQ(last.op_type(), "Cast");
  EXPECT_EQ(last.output(0), "logits");
  EXPECT_EQ(attr(last, "to")->i(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  const onnx::TensorProto* w = init_named(m, "conv1/weights");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->data_type(), onnx::TensorProto::FLOAT16);
  ASSERT_EQ(w->raw_data().size(), 4u * 3 * 3 * 3 * 2);
  graph::PlannedTensor pt;
  pt.name = "conv1/weights";
  pt.spec.shape = {4, 3, 3, 3};
  const std::vector<float> want = value_of(pt);
  for (size_t i = 0; i < want.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, w->raw_data().data() + 2 * i, 2);
    ASSERT_EQ(h, f32_to_f16_bits(want[i])) << i;
  }
  for (const onnx::TensorProto& t : m.graph().initializer())
    EXPECT_TRUE(t.data_type() == onnx::TensorProto::FLOAT16 || t.data_type() == onnx::TensorProto::INT64) << t.name();
}

TEST(ExportOnnx, OnlyWhatTheLogitsNeedIsExported) {
  const char* text = R"(
    input { channels: 1 height: 4 width: 4 }
    layers { name: "c" inputs: "data" conv { filters: 2 kernel: 3 padding: "same" } }
    layers { name: "fc" inputs: "c" fully_connected { units: 3 } }
    layers { name: "aux" inputs: "c" fully_connected { units: 3 } }
    logits: "fc"
    aux_logits: "aux")";
  const onnx::ModelProto m = export_net(net_from_text(text));
  EXPECT_FALSE(node_named(m, "aux"));
  EXPECT_FALSE(init_named(m, "aux/weights"));
  EXPECT_TRUE(init_named(m, "fc/weights"));
  EXPECT_EQ(m.graph().output_size(), 1);
}

TEST(ExportOnnx, LogitsThroughDropoutGetAnIdentity) {
  const char* text = R"(
    input { channels: 1 height: 2 width: 2 }
    layers { name: "fc" inputs: "data" fully_connected { units: 3 } }
    layers { name: "d" inputs: "fc" dropout {} }
    logits: "d")";
  const onnx::ModelProto m = export_net(net_from_text(text));
  const auto& nodes = m.graph().node();
  ASSERT_EQ(nodes.size(), 3);  // Flatten, Gemm, Identity
  EXPECT_EQ(nodes[2].op_type(), "Identity");
  EXPECT_EQ(nodes[2].input(0), "fc");
  EXPECT_EQ(nodes[2].output(0), "logits");
}

TEST(ExportOnnx, EveryRegisteredLayerOpHasAMapping) {
  const std::vector<std::string> mapped = onnx_export::exportable_ops();
  std::set<std::string> registered;
  for (const ops::OpDef* d : graph::builtin_op_registry().all()) registered.insert(d->name);
  // The loss and the metric are not layers (schemas/net.proto has no layer for them).
  for (const std::string& op : registered) {
    if (op == "softmax_xent" || op == "top_k") continue;
    EXPECT_NE(std::find(mapped.begin(), mapped.end(), op), mapped.end()) << op << " has no ONNX mapping";
  }
  for (const std::string& op : mapped) EXPECT_TRUE(registered.count(op)) << op << " is mapped but not an op";
}

TEST(ExportOnnx, ZooModelsExportWithTheirVariables) {
  for (const auto& [name, size] : std::vector<std::pair<std::string, int>>{
           {"lenet", 28}, {"cifarnet", 32}, {"mobilenet_v2_035", 32}, {"resnet_cifar_20", 32}, {"inception_v3", 75},
           {"nasnet_mobile", 32}, {"pnasnet_mobile", 32}}) {
    SCOPED_TRACE(name);
    const NetDef net = zoo::build_net(name, {.num_classes = 7, .height = size, .width = size, .aux_logits = false});
    const graph::NetPlan plan = graph::NetPlan::make(net, {});
    const onnx::ModelProto m = onnx_export::build_onnx_model(plan, value_of, {});
    std::map<std::string, std::vector<int64_t>> want;
    for (const graph::PlanNode& n : plan.nodes()) {
      for (const graph::PlannedTensor& t : n.params)
        if (t.trainable) want[t.name] = t.spec.shape;
      for (const graph::PlannedTensor& t : n.state) want[t.name] = t.spec.shape;
    }
    for (const auto& [v, shape] : want) {
      const onnx::TensorProto* t = init_named(m, v);
      ASSERT_TRUE(t) << v << " is not an initializer";
      EXPECT_EQ(dims(*t), shape) << v;
    }
    EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 7);
  }
}

class ExportOnnxFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(FASTNN_BINARY_DIR) / "test_tmp" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  std::string read(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(ExportOnnxFile, ExternalDataHoldsTheLargeInitializers) {
  onnx::ModelProto m = export_net(net_from_text(kEveryLayer));
  const onnx::ModelProto original = m;
  const std::string path = (dir_ / "sub" / "m.onnx").string();
  const onnx_export::WrittenModel w = onnx_export::write_onnx_file(m, path, onnx_export::External::kAlways);
  ASSERT_EQ(w.data_path, (dir_ / "sub" / "m.onnx.data").string());
  const std::string data = read(w.data_path);
  EXPECT_EQ(data.size(), w.data_bytes);
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(read(path)));
  int external = 0;
  for (int i = 0; i < back.graph().initializer_size(); ++i) {
    const onnx::TensorProto& t = back.graph().initializer(i);
    const onnx::TensorProto& o = original.graph().initializer(i);
    ASSERT_EQ(t.name(), o.name());
    if (o.raw_data().size() < onnx_export::kExternalMinBytes) {
      EXPECT_EQ(t.raw_data(), o.raw_data()) << t.name();
      EXPECT_NE(t.data_location(), onnx::TensorProto::EXTERNAL);
      continue;
    }
    ++external;
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL) << t.name();
    EXPECT_FALSE(t.has_raw_data());
    std::map<std::string, std::string> kv;
    for (const auto& e : t.external_data()) kv[e.key()] = e.value();
    EXPECT_EQ(kv["location"], "m.onnx.data");
    const uint64_t off = std::stoull(kv["offset"]), len = std::stoull(kv["length"]);
    EXPECT_EQ(off % onnx_export::kExternalAlign, 0u);
    EXPECT_EQ(len, o.raw_data().size());
    ASSERT_LE(off + len, data.size());
    EXPECT_EQ(data.substr(off, len), o.raw_data()) << t.name();
  }
  EXPECT_EQ(external, w.external_tensors);
  EXPECT_GE(external, 1);
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "sub"))
    EXPECT_EQ(e.path().filename().string().find("fastnn-tmp"), std::string::npos) << e.path();
}

TEST_F(ExportOnnxFile, AutoGoesExternalAtTheLimitAndNeverRefuses) {
  onnx::ModelProto m = export_net(net_from_text(kEveryLayer));
  const uint64_t size = m.ByteSizeLong();
  onnx::ModelProto copy = m;
  EXPECT_THROW(onnx_export::write_onnx_file(copy, (dir_ / "n.onnx").string(), onnx_export::External::kNever, size),
               ConfigError);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "n.onnx"));
  const onnx_export::WrittenModel w =
      onnx_export::write_onnx_file(m, (dir_ / "a.onnx").string(), onnx_export::External::kAuto, size);
  EXPECT_FALSE(w.data_path.empty());
  EXPECT_GE(w.external_tensors, 1);
  EXPECT_LT(w.model_bytes, size);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "a.onnx.data"));
}

TEST_F(ExportOnnxFile, SmallModelsAreOneFile) {
  onnx::ModelProto m = export_net(net_from_text(kEveryLayer));
  const std::string serialized = m.SerializeAsString();
  const std::string path = (dir_ / "m.onnx").string();
  const onnx_export::WrittenModel w = onnx_export::write_onnx_file(m, path);
  EXPECT_TRUE(w.data_path.empty());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "m.onnx.data"));
  EXPECT_EQ(read(path), serialized);
  EXPECT_EQ(w.model_bytes, serialized.size());
}

}  // namespace
}  // namespace fastnn
