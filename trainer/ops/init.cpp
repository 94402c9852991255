#include "trainer/ops/init.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

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

// ---- InitRule ----

namespace fastnn::ops {

namespace {

// The 4 Philox words of block j in `stream`.
std::array<uint32_t, 4> block_words(uint64_t seed, uint64_t stream, uint64_t j) {
  return philox4x32_10({static_cast<uint32_t>(j), static_cast<uint32_t>(j >> 32), static_cast<uint32_t>(stream),
                        static_cast<uint32_t>(stream >> 32)},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Box-Muller on block j gives the two standard normals of elements 2j and 2j+1 (cos and sin), so a
// tensor costs one Philox block per two elements. Single-precision transcendentals: initial values
// are stored as f32 (f64 gradient checks need the distribution, not the last bits), and they halve
// the cost of initialising 60 M parameters.
std::array<double, 2> std_normal_pair(uint64_t seed, uint64_t stream, uint64_t j) {
  const auto w = block_words(seed, stream, j);
  const float u1 = static_cast<float>(uniform01_open0(w[0], w[1]));  // (0, 1]: the log stays finite
  const float theta = static_cast<float>(2.0 * std::numbers::pi * uniform01_open0(w[2], w[3]));
  const float r = std::sqrt(-2.0f * std::log(u1));
  return {static_cast<double>(r * std::cos(theta)), static_cast<double>(r * std::sin(theta))};
}

double std_normal(uint64_t seed, uint64_t stream, uint64_t i) { return std_normal_pair(seed, stream, i >> 1)[i & 1]; }

// Uniform in [0, 1) for element i: two elements per block (words 0-1 and 2-3).
double uniform_01(uint64_t seed, uint64_t i) {
  const auto w = block_words(seed, 0, i >> 1);
  return 1.0 - ((i & 1) ? uniform01_open0(w[2], w[3]) : uniform01_open0(w[0], w[1]));
}

// TensorFlow's truncated normal: redraw beyond 2 stddev. Attempt a draws from stream 1 + a; after 64
// failed attempts (probability 0.0455^64) the last draw is clamped.
double truncated_std_normal(uint64_t seed, uint64_t i) {
  double z = 0;
  for (uint64_t attempt = 0; attempt < 64; ++attempt) {
    z = std_normal(seed, 1 + attempt, i);
    if (std::fabs(z) <= 2.0) return z;
  }
  return std::clamp(z, -2.0, 2.0);
}

// p[i] = scale * z_i + shift for the normal (or, `truncated`, TF truncated normal) draw of element i:
// the same values as std_normal / truncated_std_normal, computed a block at a time.
template <typename T>
void fill_normal(Tensor& t, double shift, double scale, bool truncated, uint64_t seed) {
  T* p = t.data<T>();
  const int64_t n = t.numel();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, (n + 1) / 2, 1 << 13), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t j = r.begin(); j < r.end(); ++j) {
      const auto z = std_normal_pair(seed, 1, static_cast<uint64_t>(j));
      for (int64_t k = 0; k < 2 && 2 * j + k < n; ++k) {
        const uint64_t i = static_cast<uint64_t>(2 * j + k);
        double v = z[static_cast<size_t>(k)];
        if (truncated && std::fabs(v) > 2.0) v = truncated_std_normal(seed, i);
        p[i] = static_cast<T>(shift + scale * v);
      }
    }
  });
}

void fill_normal_dtype(Tensor& t, double shift, double scale, bool truncated, uint64_t seed) {
  if (t.dtype() == DType::kF32) return fill_normal<float>(t, shift, scale, truncated, seed);
  if (t.dtype() == DType::kF64) return fill_normal<double>(t, shift, scale, truncated, seed);
  throw Error(str("init_tensor: random init of ", t.describe(), " (f32 or f64 only)"));
}

template <typename T, typename F>
void fill_each(Tensor& t, F&& value_of) {
  T* p = t.data<T>();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, t.numel(), 1 << 14), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) p[i] = static_cast<T>(value_of(static_cast<uint64_t>(i)));
  });
}

template <typename F>
void fill_each_dtype(Tensor& t, F&& value_of) {
  if (t.dtype() == DType::kF32) return fill_each<float>(t, value_of);
  if (t.dtype() == DType::kF64) return fill_each<double>(t, value_of);
  throw Error(str("init_tensor: random init of ", t.describe(), " (f32 or f64 only)"));
}

}  // namespace

void init_tensor(Tensor& t, const InitRule& rule, int64_t fan_in, int64_t fan_out, uint64_t seed) {
  using K = InitRule::Kind;
  FASTNN_CHECK(t.defined() && t.device() == Device::kCpu, "init_tensor needs a CPU tensor");
  auto need_fans = [&](const char* what) {
    if (fan_in < 1 || fan_out < 1)
      throw ConfigError(str("init ", what, " needs positive fans, got fan_in ", fan_in, " fan_out ", fan_out));
  };
  switch (rule.kind) {
    case K::kZeros: t.zero(); return;
    case K::kConstant: t.fill(rule.value); return;
    case K::kUniform: {
      if (!(rule.low <= rule.high)) throw ConfigError(str("init uniform: low ", rule.low, " > high ", rule.high));
      const double lo = rule.low, span = rule.high - rule.low;
      return fill_each_dtype(t, [&](uint64_t i) { return lo + span * uniform_01(seed, i); });
    }
    case K::kNormal:
    case K::kTruncatedNormal: {
      if (!(rule.stddev >= 0)) throw ConfigError(str("init normal: stddev must be >= 0, got ", rule.stddev));
      const double m = rule.mean, s = rule.stddev;
      return fill_normal_dtype(t, m, s, rule.kind == K::kTruncatedNormal, seed);
    }
    case K::kHeNormal: {
      need_fans("he_normal");
      return fill_normal_dtype(t, 0.0, std::sqrt(2.0 / static_cast<double>(fan_in)), false, seed);
    }
    case K::kGlorotUniform: {
      need_fans("glorot_uniform");
      const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
      return fill_each_dtype(t, [&](uint64_t i) { return a * (2.0 * uniform_01(seed, i) - 1.0); });
    }
    case K::kVarianceScaling: {
      need_fans("variance_scaling");
      if (!(rule.factor > 0)) throw ConfigError(str("init variance_scaling: factor must be > 0, got ", rule.factor));
      const double n = rule.mode == InitRule::Mode::kFanIn    ? static_cast<double>(fan_in)
                       : rule.mode == InitRule::Mode::kFanOut ? static_cast<double>(fan_out)
                                                              : (fan_in + fan_out) / 2.0;
      if (rule.uniform) {
        const double lim = std::sqrt(3.0 * rule.factor / n);
        return fill_each_dtype(t, [&](uint64_t i) { return lim * (2.0 * uniform_01(seed, i) - 1.0); });
      }
      return fill_normal_dtype(t, 0.0, std::sqrt(1.3 * rule.factor / n), true, seed);
    }
  }
}

}  // namespace fastnn::ops
