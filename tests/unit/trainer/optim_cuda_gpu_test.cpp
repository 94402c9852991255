// The fused GPU optimizer updates (trainer/optim/update_kernels.h) against the CPU optimizers (trainer/optim/):
// three steps of each of the eight (momentum plain and Nesterov) on the same weights and gradients must
// give bitwise equal weights and slots (f32 gradients, and f16 gradients whose values the CPU sees
// widened); ftrl with a power other than -0.5 (CUDA's powf) within a tolerance. DeviceOptimizer against
// Optimizer built from the same options: equal exported state (names, sizes, bits) after three steps.
// The training step's prepare / decide / apply against the CPU update order, and the device-side dynamic
// loss scaler against the host LossScaler.
// Skipped without a CUDA device (DeviceOptimizer.SupportsEveryOptimizerButTheCpuOnlyOnes needs none); one skipping test in
// a CPU-only build.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(CudaOptim, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "trainer/cuda/runtime.h"
#include "tests/unit/trainer/cuda_test_util.h"
#include "schemas/job_config.pb.h"
#include "trainer/optim/device_optimizer.h"
#include "trainer/optim/loss_scaler.h"
#include "trainer/optim/optimizers.h"
#include "trainer/optim/update_kernels.h"
#include "trainer/ops/random.h"

namespace fastnn {
namespace {

constexpr int64_t kCount = 5003;  // odd, several thread blocks

std::vector<float> uniform(uint64_t stream, float lo, float hi) {
  std::vector<float> v(kCount);
  for (int64_t i = 0; i < kCount; ++i)
    v[i] = lo + (hi - lo) * ops::uniform01(ops::philox_word(11, stream, static_cast<uint64_t>(i)));
  return v;
}

Tensor dev(const std::vector<float>& v) { return cuda::to_device(Tensor::from<float>({kCount}, v)); }
std::vector<float> host(const Tensor& t) { return cuda::to_host(t).to_vector<float>(); }

// Gradients rounded to f16 (so the f16 and f32 runs see identical values).
std::vector<float> f16_exact(std::vector<float> g) {
  for (float& x : g) x = f16_bits_to_f32(f32_to_f16_bits(x));
  return g;
}

Tensor dev_grad(const std::vector<float>& g, bool as_f16) {
  const Tensor h = Tensor::from<float>({kCount}, g);
  return cuda::to_device(as_f16 ? h.to(DType::kF16) : h);
}

enum class Kind { kSgd, kMomentum, kNesterov, kAdam, kAdamW, kRmsProp, kAdagrad, kAdadelta, kFtrl, kFtrlPow };

// The slots' initial values, in the CPU optimizer's slot order (the kernels take them as M, V).
std::vector<float> slot_inits(Kind kind) {
  switch (kind) {
    case Kind::kSgd: return {};
    case Kind::kMomentum:
    case Kind::kNesterov: return {0.f};
    case Kind::kRmsProp: return {1.f, 0.f};  // rms starts at one
    case Kind::kAdagrad: return {0.1f};
    case Kind::kFtrl:
    case Kind::kFtrlPow: return {0.1f, 0.f};
    default: return {0.f, 0.f};
  }
}

class CudaOptimTest : public testing::TestWithParam<std::tuple<Kind, bool>> {};

TEST_P(CudaOptimTest, BitwiseEqualToTheCpuOptimizer) {
  REQUIRE_GPU();
  const auto [kind, grads_f16] = GetParam();
  std::vector<float> w = uniform(1, -1, 1);
  const std::vector<float> inits = slot_inits(kind);
  Tensor dw = dev(w), dm = dev(std::vector<float>(kCount, inits.size() > 0 ? inits[0] : 0.f)),
         dv = dev(std::vector<float>(kCount, inits.size() > 1 ? inits[1] : 0.f));
  std::vector<float> g(kCount);
  ParamRef p{"p", w.data(), g.data(), static_cast<size_t>(kCount), true};
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, mom = 0.9f, rate = 0.01f;
  const float decay = 0.9f, rho = 0.95f, l1 = 0.05f, l2 = 0.01f, pow_ = kind == Kind::kFtrlPow ? -0.6f : -0.5f;
  std::unique_ptr<Optimizer> cpu;
  switch (kind) {
    case Kind::kSgd: cpu = make_sgd({p}); break;
    case Kind::kMomentum: cpu = make_momentum({p}, mom, false); break;
    case Kind::kNesterov: cpu = make_momentum({p}, mom, true); break;
    case Kind::kAdam: cpu = make_adam({p}, b1, b2, eps); break;
    case Kind::kAdamW: cpu = make_adam_weight_decay({p}, b1, b2, eps, rate); break;
    case Kind::kRmsProp: cpu = make_rmsprop({p}, decay, mom, eps); break;
    case Kind::kAdagrad: cpu = make_adagrad({p}, 0.1f); break;
    case Kind::kAdadelta: cpu = make_adadelta({p}, rho, eps); break;
    case Kind::kFtrl:
    case Kind::kFtrlPow: cpu = make_ftrl({p}, pow_, 0.1f, l1, l2); break;
  }
  const cudaStream_t s = cuda::current_stream();
  float b1p = b1, b2p = b2;  // TF's beta powers, as the CPU Adam keeps them
  for (int step = 0; step < 3; ++step) {
    const float lr = 0.05f / static_cast<float>(step + 1);
    const std::vector<float> fresh = f16_exact(uniform(10 + step, -2, 2));
    std::copy(fresh.begin(), fresh.end(), g.begin());  // in place: the CPU optimizer holds g.data()
    const Tensor dg = dev_grad(g, grads_f16);
    cpu->step(lr);
    float* W = static_cast<float*>(dw.raw());
    float* M = static_cast<float*>(dm.raw());
    float* V = static_cast<float*>(dv.raw());
    auto run = [&](auto* gp) {
      switch (kind) {
        case Kind::kSgd: optim::gpu::sgd_update(kCount, lr, 1.f, W, gp, s); break;
        case Kind::kMomentum: optim::gpu::momentum_update(kCount, lr, mom, false, 1.f, W, gp, M, s); break;
        case Kind::kNesterov: optim::gpu::momentum_update(kCount, lr, mom, true, 1.f, W, gp, M, s); break;
        case Kind::kAdam: {
          const float lr_t = static_cast<float>(lr * std::sqrt(1.0 - static_cast<double>(b2p)) /
                                                (1.0 - static_cast<double>(b1p)));
          optim::gpu::adam_update(kCount, lr_t, b1, b2, eps, 1.f, W, gp, M, V, s);
          b1p *= b1;
          b2p *= b2;
          break;
        }
        case Kind::kAdamW: optim::gpu::adam_weight_decay_update(kCount, lr, b1, b2, eps, rate, 1.f, W, gp, M, V, s); break;
        case Kind::kRmsProp: optim::gpu::rmsprop_update(kCount, lr, decay, mom, eps, 1.f, W, gp, M, V, s); break;
        case Kind::kAdagrad: optim::gpu::adagrad_update(kCount, lr, 1.f, W, gp, M, s); break;
        case Kind::kAdadelta: optim::gpu::adadelta_update(kCount, lr, rho, eps, 1.f, W, gp, M, V, s); break;
        case Kind::kFtrl:
        case Kind::kFtrlPow: optim::gpu::ftrl_update(kCount, lr, pow_, l1, l2, 1.f, W, gp, M, V, s); break;
      }
    };
    if (grads_f16) run(static_cast<const __half*>(dg.raw()));
    else run(static_cast<const float*>(dg.raw()));
    cuda::synchronize();
  }
  // CUDA's powf is not glibc's: ftrl with another power is close, not bitwise.
  auto expect_equal = [&](const float* want, const std::vector<float>& got, const std::string& what) {
    if (kind != Kind::kFtrlPow) {
      EXPECT_EQ(0, std::memcmp(got.data(), want, got.size() * sizeof(float))) << what;
      return;
    }
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f + 1e-4f * std::fabs(want[i])) << what << " [" << i << "]";
  };
  expect_equal(w.data(), host(dw), "weights");
  size_t slot_index = 0;
  for (const StateArray& a : cpu->state()) {
    if (a.count != static_cast<size_t>(kCount)) continue;  // scalars (beta powers)
    ASSERT_LT(slot_index, size_t{2});
    expect_equal(a.data, host(slot_index == 0 ? dm : dv), a.name);
    ++slot_index;
  }
  EXPECT_EQ(slot_index, inits.size());
}

using OptimParam = std::tuple<Kind, bool>;
std::string optim_case_name(const testing::TestParamInfo<OptimParam>& info) {
  static const char* const names[] = {"sgd",     "momentum", "nesterov", "adam", "adamw",
                                      "rmsprop", "adagrad",  "adadelta", "ftrl", "ftrl_pow"};
  return std::string(names[static_cast<int>(std::get<0>(info.param))]) +
         (std::get<1>(info.param) ? "_f16_grads" : "_f32_grads");
}

INSTANTIATE_TEST_SUITE_P(All, CudaOptimTest,
                         testing::Combine(testing::Values(Kind::kSgd, Kind::kMomentum, Kind::kNesterov, Kind::kAdam,
                                                          Kind::kAdamW, Kind::kRmsProp, Kind::kAdagrad,
                                                          Kind::kAdadelta, Kind::kFtrl, Kind::kFtrlPow),
                                          testing::Bool()),
                         optim_case_name);

// Every optimizer but adamw, lars and lamb, whose per-step scalars and per-parameter norms only the CPU
// optimizers compute so far.
TEST(DeviceOptimizer, SupportsEveryOptimizerButTheCpuOnlyOnes) {
  for (std::string_view name : optimizer_names())
    EXPECT_EQ(DeviceOptimizer::supports(std::string(name)), name != "adamw" && name != "lars" && name != "lamb")
        << name;
  EXPECT_FALSE(DeviceOptimizer::supports("nadam"));
}

// DeviceOptimizer and Optimizer from the same options (FastNN's defaults) over two parameters, one of them
// without weight decay: after three steps the weights and the whole exported state are equal, bit for bit
// (ftrl's default power is -0.5), under the same names in the same order — so checkpoints interchange.
class DeviceOptimizerTest : public testing::TestWithParam<std::string> {};

TEST_P(DeviceOptimizerTest, ExportedStateEqualsTheCpuOptimizer) {
  REQUIRE_GPU();
  JobConfig config;
  config.set_optimizer(GetParam());
  config.set_adam_weight_decay_rate(0.01);
  config.set_ftrl_l1(0.05);
  const OptimizerOptions o = optimizer_options(config);
  std::vector<float> w1 = uniform(40, -1, 1), w2 = uniform(41, -1, 1), g1(kCount), g2(kCount);
  std::unique_ptr<Optimizer> cpu =
      make_optimizer(o, {ParamRef{"a/weights", w1.data(), g1.data(), static_cast<size_t>(kCount), true},
                         ParamRef{"a/bias", w2.data(), g2.data(), static_cast<size_t>(kCount), false}});
  Tensor dw1 = dev(w1), dw2 = dev(w2), dg1 = dev(g1), dg2 = dev(g2);
  DeviceOptimizer gpu(o, {DeviceParam{"a/weights", static_cast<float*>(dw1.raw()), static_cast<float*>(dg1.raw()),
                                      kCount, true},
                          DeviceParam{"a/bias", static_cast<float*>(dw2.raw()), static_cast<float*>(dg2.raw()),
                                      kCount, false}});
  for (int step = 0; step < 3; ++step) {
    const float lr = 0.05f / static_cast<float>(step + 1);
    // Into g1 and g2's own storage: the CPU optimizer holds pointers to it (an assignment of a new vector
    // would leave them dangling).
    const std::vector<float> n1 = uniform(50 + step, -2, 2), n2 = uniform(60 + step, -2, 2);
    std::copy(n1.begin(), n1.end(), g1.begin());
    std::copy(n2.begin(), n2.end(), g2.begin());
    const Tensor h1 = Tensor::from<float>({kCount}, g1), h2 = Tensor::from<float>({kCount}, g2);
    cuda::copy_async(dg1, h1);
    cuda::copy_async(dg2, h2);
    cuda::synchronize();  // before h1, h2 die
    cpu->step(lr);
    gpu.step(lr, 1.0f, nullptr);
    cuda::synchronize();
  }
  EXPECT_EQ(0, std::memcmp(host(dw1).data(), w1.data(), w1.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(host(dw2).data(), w2.data(), w2.size() * sizeof(float)));
  const std::vector<NamedArray> want = cpu->export_state(), got = gpu.export_state();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    ASSERT_EQ(got[i].data.size(), want[i].data.size()) << want[i].name;
    EXPECT_EQ(0, std::memcmp(got[i].data.data(), want[i].data.data(), want[i].data.size() * sizeof(float)))
        << want[i].name;
  }
  // And back: the CPU state imported into a fresh device optimizer is exported unchanged.
  DeviceOptimizer again(o, {DeviceParam{"a/weights", static_cast<float*>(dw1.raw()), static_cast<float*>(dg1.raw()),
                                        kCount, true},
                            DeviceParam{"a/bias", static_cast<float*>(dw2.raw()), static_cast<float*>(dg2.raw()),
                                        kCount, false}});
  again.import_state(want);
  const std::vector<NamedArray> round_trip = again.export_state();
  ASSERT_EQ(round_trip.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(round_trip[i].data, want[i].data) << want[i].name;
}

INSTANTIATE_TEST_SUITE_P(Eight, DeviceOptimizerTest,
                         testing::Values("sgd", "momentum", "adam", "adamweightdecay", "rmsprop", "adagrad",
                                         "adadelta", "ftrl"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// The training step's way: prepare (f16 gradients unscaled + weight decay into f32, statistics), decide on
// the device, apply (with the f16 copy of the new weights). Without clipping every optimizer is bitwise the
// CPU's update order (unscale, decay, step); the f16 copies are the masters rounded.
class DeviceUpdateOrderTest : public testing::TestWithParam<std::string> {};

TEST_P(DeviceUpdateOrderTest, PrepareDecideApplyEqualsTheCpuOrder) {
  REQUIRE_GPU();
  JobConfig config;
  config.set_optimizer(GetParam());
  const OptimizerOptions o = optimizer_options(config);
  const float wd = 0.01f, inv_scale = 1.0f / 1024;
  std::vector<float> w = uniform(70, -1, 1), g(kCount);
  std::unique_ptr<Optimizer> cpu = make_optimizer(o, {ParamRef{"w", w.data(), g.data(), static_cast<size_t>(kCount), true}});
  Tensor dw = dev(w), dg32 = dev(g), dvalue = cuda::to_device(Tensor::from<float>({kCount}, w).to(DType::kF16));
  Tensor dsource = cuda::to_device(Tensor::from<float>({kCount}, g).to(DType::kF16));
  DeviceOptimizer gpu(o,
                      {DeviceParam{.name = "w", .master = static_cast<float*>(dw.raw()),
                                   .grad = static_cast<float*>(dg32.raw()), .count = kCount, .decay = true,
                                   .source = dsource.raw(), .value = dvalue.raw(), .weight_decay = wd,
                                   .dtype = DType::kF16}},
                      {.compute = DType::kF16, .loss_scaling = true, .scaler = {.dynamic = false},
                       .scaler_state = {.scale = 1024}});
  for (int step = 0; step < 3; ++step) {
    const float lr = 0.05f / static_cast<float>(step + 1);
    // Scaled f16 gradients: what a backward seeded with 1024 leaves.
    std::vector<float> scaled = uniform(80 + step, -2, 2);
    for (float& x : scaled) x *= 1024;
    const Tensor h16 = Tensor::from<float>({kCount}, scaled).to(DType::kF16);
    const std::vector<float> widened = h16.to_vector<float>();
    cuda::copy_async(dsource, h16);
    cuda::synchronize();
    for (int64_t k = 0; k < kCount; ++k) g[k] = widened[k] * inv_scale + wd * w[k];
    cpu->step(lr);
    gpu.prepare(nullptr);
    gpu.decide(lr, nullptr);
    gpu.apply(nullptr);
    cuda::synchronize();
  }
  EXPECT_EQ(0, std::memcmp(host(dw).data(), w.data(), w.size() * sizeof(float)));
  const std::vector<float> rounded = Tensor::from<float>({kCount}, w).to(DType::kF16).to_vector<float>();
  EXPECT_EQ(cuda::to_host(dvalue).to_vector<float>(), rounded);
  const DeviceStepReadback rb = gpu.read_back();
  EXPECT_TRUE(rb.applied);
  EXPECT_EQ(rb.scaler.scale, 1024);
  EXPECT_GT(rb.norm, 0);
}

INSTANTIATE_TEST_SUITE_P(Eight, DeviceUpdateOrderTest,
                         testing::Values("sgd", "momentum", "adam", "adamweightdecay", "rmsprop", "adagrad",
                                         "adadelta", "ftrl"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// Dynamic loss scaling decided on the device: the same skips and scales as the host LossScaler for the same
// overflow sequence, weights untouched by a skipped step, the statistics (norm of the finite values) read
// back; clipping by the global norm from the device's norm.
TEST(DeviceOptimizer, DeviceScalerFollowsTheHostScalerAndClips) {
  REQUIRE_GPU();
  JobConfig config;
  config.set_optimizer("sgd");
  const OptimizerOptions o = optimizer_options(config);
  std::vector<float> w = uniform(90, -1, 1);
  Tensor dw = dev(w), dg32 = dev(std::vector<float>(kCount, 0.0f));
  Tensor dsource = cuda::to_device(Tensor::from<float>({kCount}, w).to(DType::kF16));
  const LossScalerOptions so{.initial_scale = 64, .dynamic = true, .growth_interval = 2, .min_scale = 1, .max_scale = 256};
  LossScaler want(so);
  DeviceOptimizer gpu(o,
                      {DeviceParam{.name = "w", .master = static_cast<float*>(dw.raw()),
                                   .grad = static_cast<float*>(dg32.raw()), .count = kCount, .source = dsource.raw(),
                                   .dtype = DType::kF16}},
                      {.compute = DType::kF16, .max_gradient_norm = 1.0, .loss_scaling = true, .scaler = want.rule(),
                       .scaler_state = want.state()});
  const bool overflow[] = {false, true, false, false, false, true, true, false};
  for (int step = 0; step < 8; ++step) {
    std::vector<float> g = uniform(100 + step, -1, 1);
    for (float& x : g) x *= static_cast<float>(want.scale());  // what a backward seeded with the scale leaves
    if (overflow[step]) g[1234] = std::numeric_limits<float>::infinity();
    const Tensor h16 = Tensor::from<float>({kCount}, g).to(DType::kF16);
    cuda::copy_async(dsource, h16);
    const std::vector<float> before = host(dw);
    gpu.prepare(nullptr);
    gpu.decide(0.1f, nullptr);
    gpu.apply(nullptr);
    const DeviceStepReadback rb = gpu.read_back();
    const bool applied = want.update(overflow[step]);
    EXPECT_EQ(rb.applied, applied) << "step " << step;
    EXPECT_EQ(rb.scaler.scale, want.scale()) << "step " << step;
    EXPECT_EQ(rb.scaler.clean, want.clean_steps()) << "step " << step;
    EXPECT_EQ(rb.scaler.skipped, want.skipped_steps()) << "step " << step;
    if (!applied) {
      EXPECT_EQ(host(dw), before) << "a skipped step changed the weights";
    }
    if (applied) {  // the update is clipped to global norm 1 (the unscaled gradients' norm is ~41)
      EXPECT_GT(rb.norm, 1.0);
      double moved = 0;
      const std::vector<float> after = host(dw);
      for (int64_t k = 0; k < kCount; ++k) moved += (after[k] - before[k]) * static_cast<double>(after[k] - before[k]);
      EXPECT_LE(std::sqrt(moved), 0.1 * 1.0 * (1 + 1e-5)) << "clipped to norm 1, times lr 0.1";
    }
  }
}

}  // namespace
}  // namespace fastnn

#endif  // FASTNN_HAVE_CUDA
