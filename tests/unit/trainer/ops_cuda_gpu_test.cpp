// CUDA kernels against the CPU oracle, for every registered op that has a CUDA kernel and every one of
// its registry test cases (plus a few larger shapes that reach cuDNN's real algorithms), in f32, f16
// and bf16:
//   - forward outputs, updated state and saved tensors, then backward gradients, from identical
//     inputs (for f16/bf16 the CPU f32 reference runs on the inputs rounded to that dtype);
//   - f32 within 1e-4 relative (TF32 off, the default policy); f16 / bf16 within 1e-2 / 5e-2 of the
//     largest reference magnitude; integer tensors (dropout mask, top_k count) bit for bit;
//   - every output and gradient element written (device buffers start as NaN).
// Plus the registration contract (runs without a GPU) and the runtime layer (copies, workspace).
// Without a CUDA device every GPU test calls GTEST_SKIP (ctest reports it skipped); without the CUDA
// build the file compiles to one skipping test.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(CudaOps, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend (FASTNN_CUDA=OFF or no nvcc)"; }

#else

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>

#include "trainer/cuda/runtime.h"
#include "tests/unit/trainer/cuda_case_util.h"
#include "tests/unit/trainer/cuda_test_util.h"
#include "trainer/ops/conv2d.h"
#include "trainer/ops/fused.h"
#include "trainer/ops/op.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

// Needs no device: registration is host code.
TEST(CudaOps, EveryRegisteredOpHasACudaKernel) {
  for (const OpDef* d : registry().all()) EXPECT_TRUE(registry().has_kernel(d->name, Device::kCuda)) << d->name;
}

struct CaseRef {
  std::string op;
  OpCase c;
  DType dt;
  CudnnVariant variant = CudnnVariant::kDefault;
};

void PrintTo(const CaseRef& c, std::ostream* os) {
  *os << c.op << "/" << c.c.label << "/" << dtype_name(c.dt) << variant_suffix(c.variant);
}

// Larger shapes than the registry's (those are sized for finite differences): they reach cuDNN's
// tiled / FFT / Winograd algorithms and multi-block reductions.
std::vector<std::pair<std::string, OpCase>> larger_cases() {
  return {
      {"conv2d", {"big_k3_same", {{"filters", 32}, {"kernel", 3}, {"padding", "same"}}, {{{8, 16, 20, 20}}}}},
      {"conv2d", {"big_stem_k7_s2_same", {{"filters", 16}, {"kernel", 7}, {"stride", 2}, {"padding", "same"}},
                  {{{4, 3, 32, 32}}}}},
      {"conv2d", {"big_pointwise_s2", {{"filters", 64}, {"kernel", 1}, {"stride", 2}, {"bias", false}},
                  {{{8, 32, 14, 14}}}}},
      {"conv2d", {"big_depthwise", {{"filters", 32}, {"kernel", 3}, {"groups", 32}, {"padding", 1}},
                  {{{4, 32, 12, 12}}}}},
      {"batch_norm", {"big_train", {}, {{{16, 32, 9, 9}}}, true}},
      {"fully_connected", {"big", {{"units", 100}}, {{{64, 512}}}}},
      {"softmax_xent", {"big_k1000", {{"label_smoothing", 0.1}}, {{{64, 1000}, DType::kF32, 0, -4, 4},
                                                                   {{64}, DType::kI32, 1000}}}},
      {"top_k", {"big_k5", {{"k", 5}}, {{{64, 1000}}, {{64}, DType::kI64, 1000}}}},
      {"max_pool2d", {"big_k3s2_same", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{4, 8, 17, 16}}}}},
      {"dropout", {"big_odd", {{"rate", 0.25}}, {{{3, 7, 11, 13}}}, true}},
      // NASNet: per-example keep bits over an odd batch (past the ramp: keep 0.5), the factorized
      // reduction's shift on an odd map.
      {"drop_path", {"big_odd", {{"keep_prob", 0.5}, {"cell_index", 1}, {"total_cells", 2}, {"total_steps", 1}},
                     {{{37, 3, 5, 7}}}, true}},
      {"spatial_shift", {"big_odd", {{"dy", 1}, {"dx", 1}}, {{{4, 8, 17, 15}}}}},
  };
}

std::vector<CaseRef> all_cases() {
  std::vector<CaseRef> v;
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const OpDef* d : registry().all()) {
      if (!d->kernels.contains(Device::kCuda)) continue;
      for (const OpCase& c : d->test_cases()) {
        v.push_back({d->name, c, dt});
        if (d->name == "depthwise_conv2d") v.push_back({d->name, c, dt, CudnnVariant::kDepthwiseCudnn});
        if (d->name == "conv2d") v.push_back({d->name, c, dt, CudnnVariant::kConvGraphApi});
      }
    }
    for (auto& [op, c] : larger_cases()) {
      v.push_back({op, c, dt});
      if (op == "conv2d") v.push_back({op, c, dt, CudnnVariant::kConvGraphApi});
    }
  }
  return v;
}

std::string case_name(const testing::TestParamInfo<CaseRef>& info) {
  std::string s = info.param.op + "_" + info.param.c.label + "_" + dtype_name(info.param.dt) +
                  variant_suffix(info.param.variant);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

constexpr uint64_t kSeed = 99, kStep = 3;

class CudaOpCase : public testing::TestWithParam<CaseRef> {};

TEST_P(CudaOpCase, MatchesCpuForwardAndBackward) {
  REQUIRE_GPU();
  const CaseRef& cr = GetParam();
  const CudnnVariantScope variant(cr.variant);
  const bool training = cr.c.training;

  // CPU f32 reference; for f16 / bf16 its inputs are first rounded to that dtype.
  auto ck = registry().create(cr.op, Device::kCpu, cr.c.attrs, case_input_specs(cr.c, DType::kF32));
  const OpSignature& cs = ck->signature();
  KernelTensors ref = allocate_kernel_tensors(cs);
  fill_case_tensors(ref, cs, cr.c, /*seed=*/42);
  round_to(ref, cr.dt);

  auto gk = registry().create(cr.op, Device::kCuda, cr.c.attrs, case_input_specs(cr.c, cr.dt));
  if (cr.variant == CudnnVariant::kConvGraphApi && !conv2d_runs_on_graph_api(*gk))
    GTEST_SKIP() << "no graph-API engine for this case: the layer kept the legacy calls (the log names cuDNN's reasons)";
  const OpSignature& gs = gk->signature();
  ASSERT_EQ(gs.outputs.size(), cs.outputs.size());
  ASSERT_EQ(gs.saved.size(), cs.saved.size());
  ASSERT_EQ(gs.params.size(), cs.params.size());
  ASSERT_EQ(gs.state.size(), cs.state.size());
  ASSERT_EQ(gs.has_backward, cs.has_backward);

  KernelTensors dev = forward_tensors_on_device(ref, gs);

  ck->forward(ref.forward_args(training, kSeed, kStep));
  gk->forward(dev.forward_args(training, kSeed, kStep));
  expect_forward_close(dev, ref, cs, cr.dt);
  // Saved tensors are only promised where the backward reads them (dropout's mask in training only).
  if (training || cr.op != "dropout")
    for (size_t i = 0; i < ref.saved.size(); ++i) expect_close(dev.saved[i], ref.saved[i], cr.dt, "saved " + cs.saved[i].name);
  if (!cs.has_backward) return;

  add_backward_tensors_on_device(dev, ref, gs);
  ck->backward(ref.backward_args(training));
  gk->backward(dev.backward_args(training));
  expect_backward_close(dev, ref, cs, cr.dt);
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaOpCase, testing::ValuesIn(all_cases()), case_name);

// The dropout mask is a pure function of (seed, step, index): CPU and CUDA agree bit for bit on a
// size that is not a multiple of the 4-element Philox block and spans many thread blocks.
// A registered one-pass CUDA fusion (`first` then `activation`: relu, or relu6 after batch_norm) against
// the composite of the two CUDA kernels (ops/fused.h) on one case: outputs, running statistics, saved
// statistics and every gradient bit for bit.
void expect_fusion_is_the_composite(const std::string& first, const OpCase& c, DType dt, bool training,
                                    const std::string& activation = "relu") {
  SCOPED_TRACE(first + "+" + activation + " " + c.label + " " + dtype_name(dt) + (training ? " training" : " eval"));
  const std::vector<TensorSpec> in = case_input_specs(c, dt);
  auto make_pair = [&] {
    auto head = registry().create(first, Device::kCuda, c.attrs, in);
    const std::vector<TensorSpec> relu_in{head->signature().outputs[0]};
    auto relu = registry().create(activation, Device::kCuda, {}, relu_in);
    return std::pair{std::move(head), std::move(relu)};
  };
  auto [h1, r1] = make_pair();
  auto composite = make_fused_kernel(std::move(h1), std::move(r1));
  auto [h2, r2] = make_pair();
  auto fused = registry().create_fusion(*h2, *r2);
  ASSERT_TRUE(fused) << "no CUDA " << first << "+" << activation << " fusion registered";
  const OpSignature &cs = composite->signature(), &fs = fused->signature();
  ASSERT_EQ(fs.saved.size() + 2, cs.saved.size()) << "the one-pass kernel saves neither z nor dz";
  KernelTensors host = allocate_kernel_tensors(as_f32(cs));  // uploaded in cs's dtypes below
  fill_case_tensors(host, as_f32(cs), c, 7);
  if (activation == "relu6") scale_batch_norm_gamma(host, 8);  // outputs past 6 too: both kinks run
  KernelTensors a = upload_for_backward(host, cs), b = upload_for_backward(host, fs);
  expect_one_pass_is_the_composite(*composite, a, *fused, b, training);
}

// Batch norm under f16/bf16 keeps its parameters, running and saved statistics in f32 (needs no device).
TEST(CudaOps, BatchNormKeepsF32ParametersAndStatistics) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    const std::vector<TensorSpec> in{TensorSpec{.name = "x", .shape = {2, 3, 4, 4}, .dtype = dt}};
    auto k = registry().create("batch_norm", Device::kCuda, {}, in);
    const OpSignature& s = k->signature();
    EXPECT_EQ(s.inputs[0].dtype, dt);
    EXPECT_EQ(s.outputs[0].dtype, dt);
    for (const auto* group : {&s.params, &s.state, &s.saved})
      for (const TensorSpec& t : *group) EXPECT_EQ(t.dtype, DType::kF32) << t.name << " under " << dtype_name(dt);
  }
}

// batch_norm+relu and batch_norm+relu6: every batch_norm case plus a ResNet-sized one, training and eval; add+relu: every
// two-input add case plus a residual-sized one (odd length: the vector path's scalar tail).
TEST(CudaFusion, OnePassKernelsAreBitwiseTheComposite) {
  REQUIRE_GPU();
  std::vector<OpCase> bn = registry().get("batch_norm").test_cases();
  OpCase big = bn.front();
  big.label = "resnet_sized";
  big.inputs = {CaseInput{.shape = {8, 64, 28, 28}}};
  bn.push_back(big);
  std::vector<OpCase> add;
  for (const OpCase& c : registry().get("add").test_cases())
    if (c.inputs.size() == 2) add.push_back(c);
  add.push_back(OpCase{.label = "residual_sized", .inputs = {CaseInput{.shape = {8, 256, 14, 15}},
                                                             CaseInput{.shape = {8, 256, 14, 15}}}});
  // Not a multiple of the 16-byte vectors' 8 or 4 elements: the scalar tail runs too.
  add.push_back(OpCase{.label = "odd_sized", .inputs = {CaseInput{.shape = {3, 5, 7, 9}}, CaseInput{.shape = {3, 5, 7, 9}}}});
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const OpCase& c : bn)
      for (bool training : {true, false})
        for (const char* act : {"relu", "relu6"}) expect_fusion_is_the_composite("batch_norm", c, dt, training, act);
    for (const OpCase& c : add) expect_fusion_is_the_composite("add", c, dt, true);
  }
}

// ResNet-like layers for the graph API's cases (channels multiples of 8, no bias): the op cases' odd
// channel counts may have no graph engine in f16 / bf16.
const std::vector<OpCase>& resnet_like_conv_cases() {
  static const std::vector<OpCase> cases{
      {"k3_c32_k64_same", {{"filters", 64}, {"kernel", 3}, {"padding", "same"}, {"bias", false}}, {{{8, 32, 16, 16}}}},
      {"k1_c64_k32", {{"filters", 32}, {"kernel", 1}, {"bias", false}}, {{{8, 64, 16, 16}}}},
  };
  return cases;
}

// The accumulating input gradient (BackwardArgs::accumulate: cuDNN's beta = 1 for the convolution, an add
// in the store for max pooling): dx = what was there + the gradient, for every conv2d and max_pool2d case
// whose kernel offers it (NCHW, and NHWC for max pooling: the packed kernel), f32; and through the graph
// API, also the ResNet-like layers in f16 and bf16 NHWC, the training path. Max pooling adds in float as
// the graph's add kernel would: exactly start + plain. The adding and the plain data gradient may run on
// different engines, so half precision allows a rounding or two of the sum.
TEST(CudaOps, ConvolutionAndMaxPoolAccumulateTheirInputGradient) {
  REQUIRE_GPU();
  int checked = 0, graph_cases = 0, graph_ran = 0, graph_added = 0;
  struct AccumulateCase {
    std::string op;
    OpCase c;
    bool nhwc;
    CudnnVariant variant;
    DType dt = DType::kF32;
  };
  std::vector<AccumulateCase> cases;
  for (const OpCase& c : registry().get("conv2d").test_cases()) {
    cases.push_back({"conv2d", c, false, CudnnVariant::kDefault});
    // The graph API adds with a plan of its own (beta = 1), in both layouts.
    for (bool nhwc : {false, true}) cases.push_back({"conv2d", c, nhwc, CudnnVariant::kConvGraphApi});
  }
  for (const OpCase& c : resnet_like_conv_cases())
    for (DType dt : {DType::kF16, DType::kBF16}) cases.push_back({"conv2d", c, true, CudnnVariant::kConvGraphApi, dt});
  for (const OpCase& c : registry().get("max_pool2d").test_cases())
    for (bool nhwc : {false, true}) cases.push_back({"max_pool2d", c, nhwc, CudnnVariant::kDefault});
  cases.push_back({"max_pool2d", OpCase{"shortcut_1x1_s2_c16", {{"kernel", 1}, {"stride", 2}}, {{{4, 16, 14, 14}}}},
                   true, CudnnVariant::kDefault});
  for (const auto& [op, c, nhwc, variant, dt] : cases) {
    SCOPED_TRACE(op + " " + c.label + (nhwc ? " NHWC " : " ") + dtype_name(dt) + variant_suffix(variant));
    const CudnnVariantScope scope(variant);
    const bool pool = op == "max_pool2d";
    auto k = nhwc ? registry().create_nhwc(op, Device::kCuda, c.attrs, case_input_specs(c, dt))
                  : registry().create(op, Device::kCuda, c.attrs, case_input_specs(c, dt));
    if (!k) continue;
    if (variant == CudnnVariant::kConvGraphApi) {  // a case that fell back to the legacy calls is no graph case
      ++graph_cases;
      graph_ran += conv2d_runs_on_graph_api(*k);
      graph_added += conv2d_adds_on_graph_api(*k);
      if (!conv2d_runs_on_graph_api(*k)) continue;
    }
    const OpSignature& sig = k->signature();
    if (!sig.accumulates_input_grads) continue;
    ++checked;
    const OpSignature host_sig = as_f32(sig);  // filled in f32, uploaded in the kernel's dtypes
    KernelTensors host = allocate_kernel_tensors(host_sig);
    fill_case_tensors(host, host_sig, c, 11);
    KernelTensors d = forward_tensors_on_device(host, sig);
    k->forward(d.forward_args(true));
    add_backward_tensors_on_device(d, host, sig);
    k->backward(d.backward_args(true));
    const std::vector<float> plain = cuda::to_host(d.d_inputs[0]).to_vector<float>();
    Tensor base = Tensor::empty(sig.inputs[0].shape);
    fill_uniform(base, -1, 1, 5, 6);
    const Tensor start_dt = base.to(sig.inputs[0].dtype);
    d.d_inputs[0] = cuda::to_device(start_dt);
    ops::BackwardArgs b = d.backward_args(true);
    b.accumulate = 1;
    k->backward(b);
    const std::vector<float> got = cuda::to_host(d.d_inputs[0]).to_vector<float>(), start = start_dt.to_vector<float>();
    const double rel = dt == DType::kF32 ? 1e-5 : dt == DType::kF16 ? 1e-2 : 5e-2;
    for (size_t i = 0; i < got.size(); ++i) {
      if (pool) ASSERT_EQ(got[i], start[i] + plain[i]) << i;
      else ASSERT_NEAR(got[i], start[i] + plain[i], rel * (1 + std::fabs(start[i] + plain[i]))) << i;
    }
  }
  EXPECT_GT(checked, 0);
  // Adding (beta = 1) on the graph API is an engine of its own; without one a layer sums a scratch buffer
  // in instead, so a shortfall here is an answer to record, not a failure. No plan at all is a failure.
  std::printf("[ graph API ] %d of %d conv2d cases ran on cuDNN's graph API, %d of them adding into dx (beta = 1)\n",
              graph_ran, graph_cases, graph_added);
  EXPECT_GT(graph_ran, 0) << "conv_api=graph built no plans for any case";
}

// The op cases above have odd channel counts, so their _graph cases may fall back (and skip). The two
// ResNet-like layers get graph-API plans for all three passes in each dtype and layout where cuDNN has
// them (printed); f16 NHWC, the training path conv_api=graph is for, must: if it does not, conv_api=graph
// is not working.
TEST(CudaOps, ConvolutionGraphApiPlansResNetLikeLayers) {
  REQUIRE_GPU();
  const CudnnVariantScope scope(CudnnVariant::kConvGraphApi);
  for (const OpCase& c : resnet_like_conv_cases()) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (bool nhwc : {false, true}) {
        auto k = nhwc ? registry().create_nhwc("conv2d", Device::kCuda, c.attrs, case_input_specs(c, dt))
                      : registry().create("conv2d", Device::kCuda, c.attrs, case_input_specs(c, dt));
        const bool graph = k && conv2d_runs_on_graph_api(*k), adds = k && conv2d_adds_on_graph_api(*k);
        std::printf("[ graph API ] %-16s %-4s %s: %s\n", c.label.c_str(), dtype_name(dt), nhwc ? "NHWC" : "NCHW",
                    graph ? (adds ? "graph plans, adding data gradient too" : "graph plans (data gradient adds via scratch)")
                          : "legacy calls (no graph engine; the warning says why)");
        if (dt == DType::kF16 && nhwc) {
          EXPECT_TRUE(graph) << c.label << " f16 NHWC";
        }
      }
    }
  }
}

TEST(CudaOps, DropoutMaskIsTheCpuMaskBitForBit) {
  REQUIRE_GPU();
  const Attrs attrs{{"rate", 0.4}};
  const std::vector<TensorSpec> in{TensorSpec{.name = "x", .shape = {1000003}, .dtype = DType::kF32}};
  auto ck = registry().create("dropout", Device::kCpu, attrs, in);
  auto gk = registry().create("dropout", Device::kCuda, attrs, in);
  KernelTensors ref = allocate_kernel_tensors(ck->signature());
  fill_case_tensors(ref, ck->signature(), OpCase{"x", attrs, {{{1000003}}}}, 5);
  KernelTensors dev;
  dev.inputs = {cuda::to_device(ref.inputs[0])};
  dev.outputs = {device_garbage(gk->signature().outputs[0])};
  dev.saved = {device_garbage(gk->signature().saved[0])};
  for (uint64_t step : {0ull, 1ull, 0x100000000ull}) {
    ck->forward(ref.forward_args(true, 0xDEADBEEFCAFEull, step));
    gk->forward(dev.forward_args(true, 0xDEADBEEFCAFEull, step));
    const Tensor mask = cuda::to_host(dev.saved[0]), y = cuda::to_host(dev.outputs[0]);
    EXPECT_EQ(0, std::memcmp(mask.raw(), ref.saved[0].raw(), mask.nbytes())) << "step " << step;
    EXPECT_EQ(0, std::memcmp(y.raw(), ref.outputs[0].raw(), y.nbytes())) << "step " << step;
  }
}

// softmax_xent or top_k over 3 rows of 4 classes, zero logits, labels `labels`.
std::pair<std::unique_ptr<OpKernel>, KernelTensors> label_kernel(const char* op, std::vector<int32_t> labels) {
  const std::vector<TensorSpec> in{TensorSpec{.name = "logits", .shape = {3, 4}, .dtype = DType::kF32},
                                   TensorSpec{.name = "labels", .shape = {3}, .dtype = DType::kI32}};
  auto k = registry().create(op, Device::kCuda, {}, in);
  KernelTensors t = allocate_kernel_tensors(k->signature(), Device::kCuda, false);
  t.inputs[0] = cuda::to_device(Tensor::zeros({3, 4}));
  t.inputs[1] = cuda::to_device(Tensor::from<int32_t>({3}, labels));
  return {std::move(k), std::move(t)};
}

TEST(CudaOps, BadLabelThrows) {
  REQUIRE_GPU();
  for (const char* op : {"softmax_xent", "top_k"}) {
    auto [k, t] = label_kernel(op, {0, 4, 1});
    EXPECT_THROW(k->forward(t.forward_args(true)), Error) << op;
    t.inputs[1] = cuda::to_device(Tensor::from<int32_t>({3}, {0, 3, 1}));
    EXPECT_NO_THROW(k->forward(t.forward_args(true))) << op;
  }
}

// Policy::defer_label_checks (the step runner's): no throw and no sync at the kernel; the bad label is
// raised by raise_label_errors() after the caller's synchronisation, naming the op and the sample; a
// clean call raises nothing and the queue is empty afterwards.
TEST(CudaOps, DeferredLabelCheckRaisesAfterTheSync) {
  REQUIRE_GPU();
  const cuda::Policy before = cuda::policy();
  cuda::Policy p = before;
  p.defer_label_checks = true;
  cuda::set_policy(p);
  for (const char* op : {"softmax_xent", "top_k"}) {
    auto [k, t] = label_kernel(op, {0, 1, 7});
    EXPECT_NO_THROW(k->forward(t.forward_args(true))) << op;
    cuda::synchronize();
    try {
      cuda::raise_label_errors();
      ADD_FAILURE() << op << ": no error raised";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(op) + ": the label of sample 2"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(cuda::raise_label_errors()) << "the queue is emptied by the raise";
    t.inputs[1] = cuda::to_device(Tensor::from<int32_t>({3}, {0, 3, 1}));
    k->forward(t.forward_args(true));
    cuda::synchronize();
    EXPECT_NO_THROW(cuda::raise_label_errors()) << op;
  }
  cuda::set_policy(before);
}

TEST(CudaRuntime, CopiesRoundTripAndTensorsLiveOnTheDevice) {
  REQUIRE_GPU();
  const Tensor h = Tensor::from<float>({2, 3}, {1, -2, 3.5f, 0, 1e-30f, -7});
  const Tensor d = cuda::to_device(h);
  EXPECT_EQ(d.device(), Device::kCuda);
  EXPECT_EQ(d.shape(), h.shape());
  const Tensor back = cuda::to_host(d);
  EXPECT_EQ(back.device(), Device::kCpu);
  EXPECT_EQ(0, std::memcmp(back.raw(), h.raw(), h.nbytes()));

  Tensor pinned = cuda::pinned_empty({2, 3});
  EXPECT_EQ(pinned.device(), Device::kCpu);
  cuda::copy_async(pinned, d);
  cuda::synchronize();
  EXPECT_EQ(0, std::memcmp(pinned.raw(), h.raw(), h.nbytes()));
  EXPECT_THROW(cuda::to_host(h), Error);
  EXPECT_THROW(cuda::to_device(d), Error);
}

TEST(CudaRuntime, WorkspaceGrowsAndKeepsOldBuffersAlive) {
  REQUIRE_GPU();
  cuda::Workspace ws;
  const Tensor a = ws.get(1000);
  EXPECT_GE(ws.capacity(), 1000u);
  EXPECT_EQ(a.nbytes(), 1000u);
  const Tensor b = ws.get(10);
  EXPECT_EQ(a.raw(), b.raw());  // fits: same buffer
  const Tensor c = ws.get(1 << 20);
  EXPECT_GE(ws.capacity(), size_t{1} << 20);
  EXPECT_NE(a.raw(), c.raw());
  Tensor a2 = a;
  cuda::fill_bytes(a2, 7);  // the old buffer is still valid memory
  const Tensor h = cuda::to_host(a2);
  EXPECT_EQ(h.data<uint8_t>()[999], 7);
}

}  // namespace
}  // namespace fastnn::ops

#endif  // FASTNN_HAVE_CUDA
