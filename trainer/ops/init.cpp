#include "trainer/ops/init.h"

#include <cmath>
#include <numbers>

#include "trainer/ops/random.h"

namespace fastnn::ops {

namespace {
template <typename T>
void fill_random(T* p, int64_t n, const TensorSpec& spec, uint64_t seed) {
  const double fan_in = static_cast<double>(std::max<int64_t>(spec.fan_in, 1));
  const double fan_out = static_cast<double>(std::max<int64_t>(spec.fan_out, 1));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ui = static_cast<uint64_t>(i);
    const uint32_t a = philox_word(seed, 0, 2 * ui), b = philox_word(seed, 0, 2 * ui + 1);
    if (spec.init == Init::kHeNormal) {
      // Box-Muller (one of the pair): u1 in (0, 1] keeps the log finite.
      const double u1 = uniform01_open0(a, b), u2 = uniform01(philox_word(seed, 1, ui));
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      p[i] = static_cast<T>(z * std::sqrt(2.0 / fan_in));
    } else {
      const double lim = std::sqrt(6.0 / (fan_in + fan_out));
      p[i] = static_cast<T>((2.0 * (uniform01_open0(a, b)) - 1.0) * lim);
    }
  }
}
}  // namespace

void init_tensor(Tensor& t, const TensorSpec& spec, uint64_t seed) {
  FASTNN_CHECK(t.defined() && t.device() == Device::kCpu, "init_tensor needs a CPU tensor");
  switch (spec.init) {
    case Init::kNone: return;
    case Init::kZeros: t.zero(); return;
    case Init::kOnes: t.fill(1.0); return;
    case Init::kHeNormal:
    case Init::kGlorotUniform:
      if (t.dtype() == DType::kF32) return fill_random(t.data<float>(), t.numel(), spec, seed);
      if (t.dtype() == DType::kF64) return fill_random(t.data<double>(), t.numel(), spec, seed);
      throw Error(str("init_tensor: random init of ", t.describe(), " (f32 or f64 only)"));
  }
}

}  // namespace fastnn::ops
