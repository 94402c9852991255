// The convolution + batch-norm graphs of ops/conv_bn_graph_cuda.h (issue 13, P7) against a
// double-precision reference, and what the GPU at hand says about them: whether cuDNN has an engine
// for each graph (a skip with cuDNN's reasons when not), whether its statistics overwrite or add to
// the output buffers, whether two runs agree bitwise, and (last test) how long each graph takes on
// ResNet-50's layer shapes at batch 256 beside the plain convolution. docs/CUDNN_FUSIONS.md says what
// the answers decide.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(ConvBnGraphGpu, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "trainer/cuda/cudnn_backend.h"
#include "trainer/cuda/runtime.h"
#include "trainer/ops/conv2d_graph_cuda.h"
#include "trainer/ops/conv_bn_graph_cuda.h"
#include "trainer/tensor.h"

namespace fastnn::ops::cudnn_graph {
namespace {

using cuda_test::rel_l2;

struct Shape4 {
  int64_t n, c, h, w, k, r, s, pad, stride;
  int64_t p() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - s) / stride + 1; }
  std::string name() const {
    return std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) + " -> " +
           std::to_string(k) + " " + std::to_string(r) + "x" + std::to_string(s) + "/" + std::to_string(stride);
  }
};

ConvProblem problem(const Shape4& sh) {
  ConvProblem pb;
  pb.io = CUDNN_DATA_HALF;
  pb.nhwc = true;
  pb.n = sh.n, pb.c = sh.c, pb.h = sh.h, pb.w = sh.w;
  pb.k = sh.k, pb.r = sh.r, pb.s = sh.s;
  pb.p = sh.p(), pb.q = sh.q();
  pb.pad_h = pb.pad_w = sh.pad;
  pb.stride_h = pb.stride_w = sh.stride;
  return pb;
}

EngineChoice any_engine() {
  EngineChoice c;
  c.max_workspace = size_t{1} << 30;
  return c;
}

// Values rounded to f16 (what the device holds), and the device copy.
struct HalfArray {
  std::vector<float> host;
  Tensor device;
};

HalfArray half_array(size_t count, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = u(rng);
  Tensor h = Tensor::from<float>({static_cast<int64_t>(count)}, std::span<const float>(v)).to(DType::kF16);
  return {h.to(DType::kF32).to_vector<float>(), cuda::to_device(h)};
}

std::vector<float> host_floats(const Tensor& device) {
  Tensor h = cuda::to_host(device);
  return h.dtype() == DType::kF32 ? h.to_vector<float>() : h.to(DType::kF32).to_vector<float>();
}

Tensor device_zeros(int64_t count, DType dt) {
  Tensor t = Tensor::empty({count}, dt, Device::kCuda);
  cuda::fill_bytes(t, 0);
  return t;
}

// One problem's inputs and outputs on the device, and the reference on the host (double).
struct Fixture {
  Shape4 sh;
  bool prologue;
  HalfArray x, w, y, scale, bias;  // y: dy for wgrad
  Tensor sum, sqsum;
  std::vector<double> act;  // relu(x * scale + bias) or x, NHWC

  Fixture(const Shape4& s, bool with_prologue, uint32_t seed) : sh(s), prologue(with_prologue) {
    std::mt19937 rng(seed);
    const float wr = 1.0f / std::sqrt(static_cast<float>(s.c * s.r * s.s));
    x = half_array(static_cast<size_t>(s.n * s.h * s.w * s.c), rng, -1.0f, 1.0f);
    w = half_array(static_cast<size_t>(s.k * s.r * s.s * s.c), rng, -wr, wr);
    y = half_array(static_cast<size_t>(s.n * s.p() * s.q() * s.k), rng, -1.0f, 1.0f);
    scale = half_array(static_cast<size_t>(s.c), rng, 0.5f, 1.5f);
    bias = half_array(static_cast<size_t>(s.c), rng, -0.5f, 0.5f);
    sum = device_zeros(s.k, DType::kF32);
    sqsum = device_zeros(s.k, DType::kF32);
    act.resize(x.host.size());
    for (size_t i = 0; i < act.size(); ++i) {
      const size_t c = i % static_cast<size_t>(s.c);
      const double v = x.host[i];
      act[i] = prologue ? std::max(0.0, v * scale.host[c] + bias.host[c]) : v;
    }
  }

  ConvBnTensors tensors() {
    return {.x = x.device.raw(),
            .w = w.device.raw(),
            .y = y.device.raw(),
            .scale = scale.device.raw(),
            .bias = bias.device.raw(),
            .sum = sum.data<float>(),
            .sqsum = sqsum.data<float>()};
  }

  // act at (n, input row, input col, c), zero in the padding.
  double at(int64_t n, int64_t hi, int64_t wi, int64_t c) const {
    if (hi < 0 || hi >= sh.h || wi < 0 || wi >= sh.w) return 0;
    return act[static_cast<size_t>(((n * sh.h + hi) * sh.w + wi) * sh.c + c)];
  }

  // conv(act, w): [N, P, Q, K].
  std::vector<double> forward() const {
    std::vector<double> out(static_cast<size_t>(sh.n * sh.p() * sh.q() * sh.k));
    size_t i = 0;
    for (int64_t n = 0; n < sh.n; ++n)
      for (int64_t p = 0; p < sh.p(); ++p)
        for (int64_t q = 0; q < sh.q(); ++q)
          for (int64_t k = 0; k < sh.k; ++k, ++i) {
            double acc = 0;
            for (int64_t r = 0; r < sh.r; ++r)
              for (int64_t s = 0; s < sh.s; ++s)
                for (int64_t c = 0; c < sh.c; ++c)
                  acc += at(n, p * sh.stride - sh.pad + r, q * sh.stride - sh.pad + s, c) *
                         w.host[static_cast<size_t>(((k * sh.r + r) * sh.s + s) * sh.c + c)];
            out[i] = acc;
          }
    return out;
  }

  // wgrad(act, dy): [K, R, S, C].
  std::vector<double> weight_gradient() const {
    std::vector<double> out(static_cast<size_t>(sh.k * sh.r * sh.s * sh.c), 0.0);
    for (int64_t n = 0; n < sh.n; ++n)
      for (int64_t p = 0; p < sh.p(); ++p)
        for (int64_t q = 0; q < sh.q(); ++q)
          for (int64_t k = 0; k < sh.k; ++k) {
            const double dy = y.host[static_cast<size_t>(((n * sh.p() + p) * sh.q() + q) * sh.k + k)];
            for (int64_t r = 0; r < sh.r; ++r)
              for (int64_t s = 0; s < sh.s; ++s)
                for (int64_t c = 0; c < sh.c; ++c)
                  out[static_cast<size_t>(((k * sh.r + r) * sh.s + s) * sh.c + c)] +=
                      dy * at(n, p * sh.stride - sh.pad + r, q * sh.stride - sh.pad + s, c);
          }
    return out;
  }
};

std::vector<float> as_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Runs the plan once on the fixture (fresh workspace) and waits.
void run_plan(const ConvBnPlan& plan, Fixture& f) {
  Tensor ws = plan.workspace_bytes() ? device_zeros(static_cast<int64_t>(plan.workspace_bytes()), DType::kU8) : Tensor();
  const cudaStream_t s = cuda::current_stream();
  plan.execute(cuda::cudnn_handle(s), f.tensors(), ws.raw());
  CUDA_CHECK(cudaStreamSynchronize(s));
}

std::shared_ptr<const ConvBnPlan> build_or_skip_reason(const Shape4& sh, ConvBnGraph g, std::string* why) {
  auto plan = ConvBnPlan::build(problem(sh), g, any_engine(), why);
  std::printf("%-28s %-34s %s\n", graph_name(g), sh.name().c_str(),
              plan ? plan->description().c_str() : ("no plan: " + *why).c_str());
  std::fflush(stdout);
  return plan;
}

// Small shapes of ResNet's three kinds of convolution: 1x1, 3x3 padded, 1x1 strided (the projection).
const Shape4 kSmallShapes[] = {{4, 64, 8, 8, 64, 1, 1, 0, 1}, {4, 32, 8, 8, 64, 3, 3, 1, 1}, {4, 64, 8, 8, 128, 1, 1, 0, 2}};

// Runs `check` on each small shape whose plan builds; when none builds, the test is skipped with cuDNN's
// reasons (an answer about this GPU, not a failure). Channel counts are multiples of 8, so every [C]
// slot of f32 or f16 stays 16-byte aligned.
void for_each_plan(ConvBnGraph g, const std::function<void(const Shape4&, const ConvBnPlan&)>& check) {
  int built = 0;
  std::string reasons;
  for (const Shape4& sh : kSmallShapes) {
    SCOPED_TRACE(sh.name());
    std::string why;
    auto plan = build_or_skip_reason(sh, g, &why);
    if (!plan) {
      reasons += sh.name() + ": " + why + "\n";
      continue;
    }
    ++built;
    check(sh, *plan);
  }
  if (!built) GTEST_SKIP() << "cuDNN has no engine for " << graph_name(g) << " on this GPU:\n" << reasons;
}

class ConvBnForwardGraph : public ::testing::TestWithParam<ConvBnGraph> {};

TEST_P(ConvBnForwardGraph, OutputAndStatisticsEqualTheDoubleReference) {
  REQUIRE_GPU();
  const ConvBnGraph g = GetParam();
  int shape_no = 0;
  for_each_plan(g, [&](const Shape4& sh, const ConvBnPlan& plan) {
    ++shape_no;
    Fixture f(sh, has_prologue(g), 17);
    run_plan(plan, f);
    const std::vector<double> ref = f.forward();
    std::vector<double> ref_sum(static_cast<size_t>(sh.k), 0), ref_sq(static_cast<size_t>(sh.k), 0);
    for (size_t i = 0; i < ref.size(); ++i) {
      ref_sum[i % static_cast<size_t>(sh.k)] += ref[i];
      ref_sq[i % static_cast<size_t>(sh.k)] += ref[i] * ref[i];
    }
    const std::vector<float> y = host_floats(f.y.device);
    const std::vector<float> sum = host_floats(f.sum), sq = host_floats(f.sqsum);
    // f16 output (2^-11 relative rounding); sums in f32 over up to 256 values per channel.
    EXPECT_LT(rel_l2(y, as_floats(ref)), 3e-3);
    EXPECT_LT(rel_l2(sum, as_floats(ref_sum), 1e-2), 1e-2);
    EXPECT_LT(rel_l2(sq, as_floats(ref_sq)), 3e-3);

    // Two runs on the same inputs: bitwise the same unless the engine says it is not deterministic.
    const std::vector<float> y1 = y, sum1 = sum, sq1 = sq;
    cuda::fill_bytes(f.sum, 0);
    cuda::fill_bytes(f.sqsum, 0);
    run_plan(plan, f);
    if (plan.description().find("NONDETERMINISTIC") == std::string::npos) {
      EXPECT_EQ(0, std::memcmp(y1.data(), host_floats(f.y.device).data(), y1.size() * sizeof(float)));
      EXPECT_EQ(sum1, host_floats(f.sum));
      EXPECT_EQ(sq1, host_floats(f.sqsum));
    }

    // Do the statistics overwrite their buffers or add to them (does the caller zero them first)?
    std::vector<float> thousand(static_cast<size_t>(sh.k), 1000.0f);
    Tensor filled = cuda::to_device(Tensor::from<float>({sh.k}, std::span<const float>(thousand)));
    cuda::copy_async(f.sum, filled);
    run_plan(plan, f);
    const std::vector<float> after = host_floats(f.sum);
    std::vector<float> plus(sum1);
    for (float& v : plus) v += 1000.0f;
    const bool overwrites = rel_l2(after, sum1, 1e-2) < 1e-3;
    const bool adds = rel_l2(after, plus) < 1e-3;
    std::printf("%-28s %-34s statistics %s their buffers\n", graph_name(g), sh.name().c_str(),
                overwrites ? "overwrite" : adds ? "add to" : "do something else with");
    RecordProperty("statistics_" + std::to_string(shape_no), overwrites ? "overwrite" : adds ? "accumulate" : "other");
    EXPECT_TRUE(overwrites || adds);
  });
}

INSTANTIATE_TEST_SUITE_P(Graphs, ConvBnForwardGraph,
                         ::testing::Values(ConvBnGraph::kFpropStats, ConvBnGraph::kScaleBiasReluFpropStats),
                         [](const auto& info) {
                           std::string n = graph_name(info.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(ConvBnWgradGraph, ScaleBiasReluWgradEqualsTheDoubleReference) {
  REQUIRE_GPU();
  const ConvBnGraph g = ConvBnGraph::kScaleBiasReluWgrad;
  for_each_plan(g, [&](const Shape4& sh, const ConvBnPlan& plan) {
    Fixture f(sh, true, 23);
    run_plan(plan, f);
    const std::vector<float> dw = host_floats(f.w.device);
    // Each dw element sums N·P·Q products; an engine noted REDUCED_PRECISION_REDUCTION may add partial
    // sums in f16, hence a looser bound than the forward's.
    EXPECT_LT(rel_l2(dw, as_floats(f.weight_gradient())), 5e-3);
    run_plan(plan, f);
    if (plan.description().find("NONDETERMINISTIC") == std::string::npos) {
      EXPECT_EQ(dw, host_floats(f.w.device));
    }
  });
}

// The backward of batch norm + relu + conv: inputs x (the batch norm's input), its saved statistics and
// weights, the convolution's w and dy; the reference in double.
struct DgradFixture {
  Shape4 sh;
  HalfArray x, w, dy;
  std::vector<float> mean, invstd, scale, bias;  // f32 [C]
  Tensor d_mean, d_invstd, d_scale, d_bias, drelu, coef;  // coef: dscale, dbias, eq_dy, eq_x, eq_bias

  DgradFixture(const Shape4& s, uint32_t seed) : sh(s) {
    std::mt19937 rng(seed);
    const float wr = 1.0f / std::sqrt(static_cast<float>(s.c * s.r * s.s));
    x = half_array(static_cast<size_t>(s.n * s.h * s.w * s.c), rng, -1.0f, 1.0f);
    w = half_array(static_cast<size_t>(s.k * s.r * s.s * s.c), rng, -wr, wr);
    dy = half_array(static_cast<size_t>(s.n * s.p() * s.q() * s.k), rng, -1.0f, 1.0f);
    auto floats = [&](float lo, float hi) {
      std::uniform_real_distribution<float> u(lo, hi);
      std::vector<float> v(static_cast<size_t>(s.c));
      for (float& f : v) f = u(rng);
      return v;
    };
    mean = floats(-0.2f, 0.2f), invstd = floats(0.8f, 1.2f), scale = floats(0.5f, 1.5f), bias = floats(-0.5f, 0.5f);
    auto up = [&](const std::vector<float>& v) {
      return cuda::to_device(Tensor::from<float>({s.c}, std::span<const float>(v)));
    };
    d_mean = up(mean), d_invstd = up(invstd), d_scale = up(scale), d_bias = up(bias);
    drelu = device_zeros(s.n * s.h * s.w * s.c, DType::kF16);
    coef = device_zeros(5 * s.c, DType::kF32);
  }

  ConvBnTensors tensors() {
    float* c = coef.data<float>();
    return {.x = x.device.raw(), .w = w.device.raw(), .y = dy.device.raw(), .scale = d_scale.raw(),
            .bias = d_bias.raw(), .mean = d_mean.data<float>(), .invstd = d_invstd.data<float>(),
            .drelu = drelu.raw(), .dscale = c, .dbias = c + sh.c, .eq_dy = c + 2 * sh.c, .eq_x = c + 3 * sh.c,
            .eq_bias = c + 4 * sh.c};
  }
};

TEST(ConvBnDgradGraph, DreluAndBatchNormGradientsEqualTheDoubleReference) {
  REQUIRE_GPU();
  const ConvBnGraph g = ConvBnGraph::kDgradDreluBnWeight;
  for_each_plan(g, [&](const Shape4& sh, const ConvBnPlan& plan) {
    DgradFixture f(sh, 29);
    Tensor ws = plan.workspace_bytes() ? device_zeros(static_cast<int64_t>(plan.workspace_bytes()), DType::kU8) : Tensor();
    const cudaStream_t st = cuda::current_stream();
    plan.execute(cuda::cudnn_handle(st), f.tensors(), ws.raw());
    CUDA_CHECK(cudaStreamSynchronize(st));

    // g = dgrad(dy, w), scattered from each output position to the inputs it read.
    const size_t xs = f.x.host.size(), C = static_cast<size_t>(sh.c);
    std::vector<double> grad(xs, 0.0);
    for (int64_t n = 0; n < sh.n; ++n)
      for (int64_t p = 0; p < sh.p(); ++p)
        for (int64_t q = 0; q < sh.q(); ++q)
          for (int64_t k = 0; k < sh.k; ++k) {
            const double d = f.dy.host[static_cast<size_t>(((n * sh.p() + p) * sh.q() + q) * sh.k + k)];
            for (int64_t r = 0; r < sh.r; ++r)
              for (int64_t s = 0; s < sh.s; ++s) {
                const int64_t hi = p * sh.stride - sh.pad + r, wi = q * sh.stride - sh.pad + s;
                if (hi < 0 || hi >= sh.h || wi < 0 || wi >= sh.w) continue;
                for (int64_t c = 0; c < sh.c; ++c)
                  grad[static_cast<size_t>(((n * sh.h + hi) * sh.w + wi) * sh.c + c)] +=
                      d * f.w.host[static_cast<size_t>(((k * sh.r + r) * sh.s + s) * sh.c + c)];
              }
          }
    std::vector<double> drelu(xs), xhat(xs), dscale(C, 0), dbias(C, 0);
    for (size_t i = 0; i < xs; ++i) {
      const size_t c = i % C;
      xhat[i] = (f.x.host[i] - static_cast<double>(f.mean[c])) * f.invstd[c];
      drelu[i] = xhat[i] * f.scale[c] + f.bias[c] > 0 ? grad[i] : 0.0;
      dbias[c] += drelu[i];
      dscale[c] += drelu[i] * xhat[i];
    }
    const double m = static_cast<double>(xs / C);
    std::vector<double> dx(xs);
    for (size_t i = 0; i < xs; ++i) {
      const size_t c = i % C;
      dx[i] = f.scale[c] * f.invstd[c] * (drelu[i] - dbias[c] / m - xhat[i] * dscale[c] / m);
    }

    const std::vector<float> got_drelu = host_floats(f.drelu), coef = host_floats(f.coef);
    auto part = [&](int i) { return std::vector<float>(coef.begin() + i * sh.c, coef.begin() + (i + 1) * sh.c); };
    EXPECT_LT(rel_l2(got_drelu, as_floats(drelu)), 3e-3);
    EXPECT_LT(rel_l2(part(0), as_floats(dscale), 1e-2), 1e-2);
    EXPECT_LT(rel_l2(part(1), as_floats(dbias), 1e-2), 1e-2);
    // dx from the coefficients and the graph's own drelu, against the reference dx.
    const std::vector<float> eq_dy = part(2), eq_x = part(3), eq_bias = part(4);
    std::vector<float> got_dx(xs);
    for (size_t i = 0; i < xs; ++i) {
      const size_t c = i % C;
      got_dx[i] = static_cast<float>(static_cast<double>(eq_dy[c]) * got_drelu[i] +
                                     static_cast<double>(eq_x[c]) * f.x.host[i] + eq_bias[c]);
    }
    EXPECT_LT(rel_l2(got_dx, as_floats(dx)), 1e-2);
  });
}

// Not a pass/fail test: the time of each graph on ResNet-50's bottleneck shapes at batch 256 beside the
// plain convolution pass it would replace (conv_api=graph's plan), printed as a table. Other gpu test
// binaries may share the GPU meanwhile (scripts/gpu/run.sh runs several side by side), so the ratios
// are a first look; the plan rewrite is then measured by `fastnn bench train`.
TEST(ConvBnGraphTiming, ResNet50BottleneckShapesAtBatch256) {
  REQUIRE_GPU();
  const Shape4 shapes[] = {
      {256, 256, 56, 56, 64, 1, 1, 0, 1},   {256, 64, 56, 56, 64, 3, 3, 1, 1},   {256, 64, 56, 56, 256, 1, 1, 0, 1},
      {256, 512, 28, 28, 128, 1, 1, 0, 1},  {256, 128, 28, 28, 128, 3, 3, 1, 1}, {256, 128, 28, 28, 512, 1, 1, 0, 1},
      {256, 1024, 14, 14, 256, 1, 1, 0, 1}, {256, 256, 14, 14, 256, 3, 3, 1, 1}, {256, 256, 14, 14, 1024, 1, 1, 0, 1},
      {256, 2048, 7, 7, 512, 1, 1, 0, 1},   {256, 512, 7, 7, 512, 3, 3, 1, 1},   {256, 512, 7, 7, 2048, 1, 1, 0, 1}};
  namespace cb = cuda::cudnn_backend;
  const cudaStream_t st = cuda::current_stream();
  const cudnnHandle_t h = cuda::cudnn_handle(st);
  std::printf("%-34s %9s %9s %9s | %9s %9s | %9s %9s\n", "shape (N x H x W x C -> K)", "fprop ms", "+stats",
              "sbr+stats", "wgrad ms", "sbr+wgrad", "dgrad ms", "+drelu+bnw");
  // Runtime-compiled engines take seconds to build per shape: the table stops after a minute so that
  // the tests stage of a device call is not held up, and each row is flushed as it is printed.
  const auto start = std::chrono::steady_clock::now();
  for (const Shape4& sh : shapes) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
      std::printf("(stopped: the table's minute is up)\n");
      break;
    }
    const ConvProblem pb = problem(sh);
    Tensor x = device_zeros(sh.n * sh.h * sh.w * sh.c, DType::kF16);
    Tensor w = device_zeros(sh.k * sh.r * sh.s * sh.c, DType::kF16);
    Tensor y = device_zeros(sh.n * sh.p() * sh.q() * sh.k, DType::kF16);
    Tensor drelu = device_zeros(sh.n * sh.h * sh.w * sh.c, DType::kF16);
    const int64_t slot = (std::max(sh.c, sh.k) + 3) / 4 * 4;  // floats: 16-byte aligned slots
    Tensor per_channel = device_zeros(11 * slot, DType::kF32);
    float* pc = per_channel.data<float>();
    const ConvBnTensors t{.x = x.raw(), .w = w.raw(), .y = y.raw(), .scale = pc, .bias = pc + slot,
                          .sum = pc + 2 * slot, .sqsum = pc + 3 * slot, .mean = pc + 4 * slot,
                          .invstd = pc + 5 * slot, .drelu = drelu.raw(), .dscale = pc + 6 * slot,
                          .dbias = pc + 7 * slot, .eq_dy = pc + 8 * slot, .eq_x = pc + 9 * slot,
                          .eq_bias = pc + 10 * slot};
    auto time_plain = [&](ConvPass pass) -> std::string {
      std::string why;
      auto plan = ConvPlan::build(pb, pass, 0.0f, any_engine(), &why);
      if (!plan) return "-";
      Tensor ws = plan->workspace_bytes() ? device_zeros(static_cast<int64_t>(plan->workspace_bytes()), DType::kU8) : Tensor();
      // Forward (x, w, y), backward data (dx, w, dy) and backward filter (x, dw, dy) take their tensors
      // in the same places.
      const float ms = cb::best_time_ms([&] { plan->execute(h, x.raw(), w.raw(), y.raw(), ws.raw()); }, st, 5);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", ms);
      return buf;
    };
    auto time_fused = [&](ConvBnGraph g) -> std::string {
      std::string why;
      auto plan = ConvBnPlan::build(pb, g, any_engine(), &why);
      if (!plan) {
        std::printf("  %s %s: %s\n", graph_name(g), sh.name().c_str(), why.c_str());
        return "-";
      }
      Tensor ws = plan->workspace_bytes() ? device_zeros(static_cast<int64_t>(plan->workspace_bytes()), DType::kU8) : Tensor();
      const float ms = cb::best_time_ms([&] { plan->execute(h, t, ws.raw()); }, st, 5);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", ms);
      return buf;
    };
    const std::string fprop = time_plain(ConvPass::kForward), stats = time_fused(ConvBnGraph::kFpropStats),
                      sbr = time_fused(ConvBnGraph::kScaleBiasReluFpropStats),
                      wgrad = time_plain(ConvPass::kBackwardFilter), sbr_wgrad = time_fused(ConvBnGraph::kScaleBiasReluWgrad),
                      dgrad = time_plain(ConvPass::kBackwardData), dgrad_bn = time_fused(ConvBnGraph::kDgradDreluBnWeight);
    std::printf("%-34s %9s %9s %9s | %9s %9s | %9s %9s\n", sh.name().c_str(), fprop.c_str(), stats.c_str(),
                sbr.c_str(), wgrad.c_str(), sbr_wgrad.c_str(), dgrad.c_str(), dgrad_bn.c_str());
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace fastnn::ops::cudnn_graph

#endif
