// The fused GPU optimizer updates (trainer/cuda/optim.h) against the CPU optimizers (trainer/optim/):
// three steps of sgd, momentum (plain and Nesterov), adam and adamweightdecay on the same weights and
// gradients must give bitwise equal weights and slots (f32 gradients, and f16 gradients whose values
// the CPU sees widened). grad_stats against a double sum of squares and a count of non-finite values.
// Skipped without a CUDA device; one skipping test in a CPU-only build.
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
#include "trainer/cuda/optim.h"
#include "trainer/cuda/runtime.h"
#include "tests/unit/trainer/cuda_test_util.h"
#include "trainer/optim/optimizers.h"
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

enum class Kind { kSgd, kMomentum, kNesterov, kAdam, kAdamW };

class CudaOptimTest : public testing::TestWithParam<std::tuple<Kind, bool>> {};

TEST_P(CudaOptimTest, BitwiseEqualToTheCpuOptimizer) {
  REQUIRE_GPU();
  const auto [kind, grads_f16] = GetParam();
  std::vector<float> w = uniform(1, -1, 1);
  Tensor dw = dev(w), dm = dev(std::vector<float>(kCount, 0.f)), dv = dev(std::vector<float>(kCount, 0.f));
  std::vector<float> g(kCount);
  ParamRef p{"p", w.data(), g.data(), static_cast<size_t>(kCount), true};
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, mom = 0.9f, rate = 0.01f;
  std::unique_ptr<Optimizer> cpu;
  switch (kind) {
    case Kind::kSgd: cpu = make_sgd({p}); break;
    case Kind::kMomentum: cpu = make_momentum({p}, mom, false); break;
    case Kind::kNesterov: cpu = make_momentum({p}, mom, true); break;
    case Kind::kAdam: cpu = make_adam({p}, b1, b2, eps); break;
    case Kind::kAdamW: cpu = make_adam_weight_decay({p}, b1, b2, eps, rate); break;
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
        case Kind::kSgd: cuda::sgd_update(kCount, lr, 1.f, W, gp, s); break;
        case Kind::kMomentum: cuda::momentum_update(kCount, lr, mom, false, 1.f, W, gp, M, s); break;
        case Kind::kNesterov: cuda::momentum_update(kCount, lr, mom, true, 1.f, W, gp, M, s); break;
        case Kind::kAdam: {
          const float lr_t = static_cast<float>(lr * std::sqrt(1.0 - static_cast<double>(b2p)) /
                                                (1.0 - static_cast<double>(b1p)));
          cuda::adam_update(kCount, lr_t, b1, b2, eps, 1.f, W, gp, M, V, s);
          b1p *= b1;
          b2p *= b2;
          break;
        }
        case Kind::kAdamW: cuda::adam_weight_decay_update(kCount, lr, b1, b2, eps, rate, 1.f, W, gp, M, V, s); break;
      }
    };
    if (grads_f16) run(static_cast<const __half*>(dg.raw()));
    else run(static_cast<const float*>(dg.raw()));
    cuda::synchronize();
  }
  const std::vector<float> got = host(dw);
  EXPECT_EQ(0, std::memcmp(got.data(), w.data(), w.size() * sizeof(float)));
  for (const StateArray& a : cpu->state()) {
    if (a.count != static_cast<size_t>(kCount)) continue;  // scalars (beta powers)
    const bool is_v = a.name.find("adam_v") != std::string::npos;
    const std::vector<float> slot = host(is_v ? dv : dm);
    EXPECT_EQ(0, std::memcmp(slot.data(), a.data, a.count * sizeof(float))) << a.name;
  }
}

using OptimParam = std::tuple<Kind, bool>;
std::string optim_case_name(const testing::TestParamInfo<OptimParam>& info) {
  static const char* const names[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
  return std::string(names[static_cast<int>(std::get<0>(info.param))]) +
         (std::get<1>(info.param) ? "_f16_grads" : "_f32_grads");
}

INSTANTIATE_TEST_SUITE_P(All, CudaOptimTest,
                         testing::Combine(testing::Values(Kind::kSgd, Kind::kMomentum, Kind::kNesterov, Kind::kAdam,
                                                          Kind::kAdamW),
                                          testing::Bool()),
                         optim_case_name);

TEST(CudaOptim, GradStatsSumOfSquaresAndNonFinite) {
  REQUIRE_GPU();
  std::vector<float> a = uniform(30, -3, 3), b = uniform(31, -1, 1);
  b[17] = std::numeric_limits<float>::infinity();
  b[4000] = std::numeric_limits<float>::quiet_NaN();
  const Tensor da = dev(a), db = cuda::to_device(Tensor::from<float>({kCount}, b).to(DType::kBF16));
  double want_b16 = 0;
  for (float x : a) want_b16 += static_cast<double>(x) * x;
  for (float x : Tensor::from<float>({kCount}, b).to(DType::kBF16).to_vector<float>())
    if (std::isfinite(x)) want_b16 += static_cast<double>(x) * x;
  const cuda::GradView views[] = {{da.raw(), kCount, 0}, {db.raw(), kCount, 2}};
  Tensor ws = Tensor::empty({static_cast<int64_t>(cuda::grad_stats_workspace_bytes(views))}, DType::kU8, Device::kCuda);
  Tensor out = Tensor::empty({2}, DType::kF64, Device::kCuda);
  cuda::grad_stats(views, static_cast<double*>(out.raw()), ws.raw(), cuda::current_stream());
  const std::vector<double> r = cuda::to_host(out).to_vector<double>();
  EXPECT_NEAR(r[0], want_b16, 1e-9 * want_b16);
  EXPECT_EQ(r[1], 2.0);
}

}  // namespace
}  // namespace fastnn

#endif  // FASTNN_HAVE_CUDA
