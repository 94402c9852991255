#include "pipeline/mixup.h"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "pipeline/half.h"
#include "pipeline/rng.h"

namespace fastnn::pipeline {
namespace {

// Gamma(a, 1): Marsaglia and Tsang (2000) for a >= 1; a < 1 boosted through Gamma(a + 1) * U^(1/a).
double gamma_draw(SampleRng& rng, double a) {
  if (a < 1) {
    const double u = 1.0 - rng.uniform_double();  // (0, 1]
    return gamma_draw(rng, a + 1) * std::pow(u, 1.0 / a);
  }
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform_double();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// The blend of one element pair in float32 as timm computes it: x * lam + x_flipped * (1 - lam), each
// product rounded to float before the sum (the pipeline is built without FMA instructions, so nothing
// contracts them; MixBatch's timm fixture would see it).
inline float blend(float own, float other, float w_own, float w_other) { return own * w_own + other * w_other; }

template <typename T>
struct Element;
template <>
struct Element<float> {
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};
template <>
struct Element<uint16_t> {  // float16 bits
  static float load(uint16_t v) { return half_to_float(v); }
  static uint16_t store(float v) { return float_to_half(v); }
};
template <>
struct Element<uint8_t> {  // FastCollateMixup: np.rint of the float blend
  static float load(uint8_t v) { return v; }
  static uint8_t store(float v) { return static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0f, 255.0f)); }
};

// a == b (an odd batch's middle sample) blends the sample with itself, as timm's flip does.
template <typename T>
void blend_pair(T* a, T* b, size_t count, float w_own, float w_other) {
  for (size_t k = 0; k < count; ++k) {
    const float x = Element<T>::load(a[k]), y = Element<T>::load(b[k]);
    a[k] = Element<T>::store(blend(x, y, w_own, w_other));
    b[k] = Element<T>::store(blend(y, x, w_own, w_other));
  }
}

// Calls run(at, bytes) for each contiguous run of CutMix's box in a sample of `spec` (elements of
// `bytes` each): one per row in NHWC, one per row and channel plane in NCHW.
template <typename F>
void for_each_box_run(const MixDraw& d, const BatchSpec& s, size_t bytes, F&& run) {
  const bool nhwc = s.layout == Layout::kNHWC;
  const int planes = nhwc ? 1 : s.channels;
  const size_t length = static_cast<size_t>(d.width) * (nhwc ? s.channels : 1) * bytes;
  for (int p = 0; p < planes; ++p)
    for (int y = d.top; y < d.top + d.height; ++y)
      run(nhwc ? (static_cast<size_t>(y) * s.width + d.left) * s.channels * bytes
               : ((static_cast<size_t>(p) * s.height + y) * s.width + d.left) * bytes,
          length);
}

// Swaps the box between samples a and b (each gets the other's pixels there); elements of `bytes` each.
void swap_box(const MixDraw& d, const BatchSpec& s, size_t bytes, char* a, char* b) {
  for_each_box_run(d, s, bytes, [&](size_t at, size_t length) { std::swap_ranges(a + at, a + at + length, b + at); });
}

// Copies the box of `src` into `dst` (one way: elem mode's partner is the unmixed copy).
void copy_box(const MixDraw& d, const BatchSpec& s, size_t bytes, char* dst, const char* src) {
  for_each_box_run(d, s, bytes, [&](size_t at, size_t length) { std::memcpy(dst + at, src + at, length); });
}

// own = own * w_own + partner * w_other, element by element, as blend_pair does for one side.
template <typename T>
void blend_into(T* own, const T* partner, size_t count, float w_own, float w_other) {
  for (size_t k = 0; k < count; ++k)
    own[k] = Element<T>::store(blend(Element<T>::load(own[k]), Element<T>::load(partner[k]), w_own, w_other));
}

// Calls fn(T{}) with the element type of a batch of `dtype`: float, half bits or uint8.
template <typename F>
void with_element_type(DType dtype, F&& fn) {
  switch (dtype) {
    case DType::kF32: return fn(float{});
    case DType::kF16: return fn(uint16_t{});
    case DType::kU8: return fn(uint8_t{});
    default: return;  // output_format() admits the three above only
  }
}

// Samples a and b mixed with each other by one draw (batch and pair modes; a == b: the middle sample).
void mix_pair(const MixDraw& d, const BatchSpec& s, char* a, char* b) {
  if (d.lambda == 1) return;
  if (d.cutmix) {
    if (a != b) swap_box(d, s, dtype_size(s.dtype), a, b);
    return;
  }
  const float w_own = static_cast<float>(d.lambda), w_other = static_cast<float>(1.0 - d.lambda);
  with_element_type(s.dtype, [&](auto zero) {
    using T = decltype(zero);
    blend_pair(reinterpret_cast<T*>(a), reinterpret_cast<T*>(b), s.sample_elements(), w_own, w_other);
  });
}

// Sample `own` mixed with `partner` (unmixed) by draw d, one way (elem mode).
void mix_one(const MixDraw& d, const BatchSpec& s, char* own, const char* partner) {
  if (d.lambda == 1) return;
  if (d.cutmix) {
    copy_box(d, s, dtype_size(s.dtype), own, partner);
    return;
  }
  const float w_own = static_cast<float>(d.lambda), w_other = static_cast<float>(1.0 - d.lambda);
  with_element_type(s.dtype, [&](auto zero) {
    using T = decltype(zero);
    blend_into(reinterpret_cast<T*>(own), reinterpret_cast<const T*>(partner), s.sample_elements(), w_own, w_other);
  });
}

// One draw from the stream: whether to mix (prob), which method (switch_prob), lambda, CutMix's box.
MixDraw draw_one(SampleRng& rng, const MixOptions& o, int height, int width) {
  if (!(rng.uniform_double() < o.prob)) return {};
  bool cutmix = o.mixup_alpha <= 0;
  if (o.mixup_alpha > 0 && o.cutmix_alpha > 0) cutmix = rng.uniform_double() < o.switch_prob;
  const double lambda = beta_draw(rng, cutmix ? o.cutmix_alpha : o.mixup_alpha);
  if (!cutmix) return MixDraw{.lambda = lambda};
  const int cy = static_cast<int>(rng.below(static_cast<uint64_t>(height)));
  const int cx = static_cast<int>(rng.below(static_cast<uint64_t>(width)));
  return cutmix_box(lambda, height, width, cy, cx);
}

bool mixing_off(const MixOptions& o, int64_t epoch) { return !o.enabled() || (o.off_epoch > 0 && epoch >= o.off_epoch); }

}  // namespace

MixMode mix_mode_from_name(std::string_view name) {
  if (name == "batch") return MixMode::kBatch;
  if (name == "pair") return MixMode::kPair;
  if (name == "elem") return MixMode::kElem;
  throw ConfigError(str("mixup_mode is batch, pair or elem (timm's modes), not '", name, "'"));
}

void check_mix_options(const MixOptions& o) {
  if (!(o.mixup_alpha >= 0)) throw ConfigError(str("mixup_alpha must be >= 0, not ", o.mixup_alpha));
  if (!(o.cutmix_alpha >= 0)) throw ConfigError(str("cutmix_alpha must be >= 0, not ", o.cutmix_alpha));
  if (!(o.prob >= 0 && o.prob <= 1)) throw ConfigError(str("mixup_prob must be in [0, 1], not ", o.prob));
  if (!(o.switch_prob >= 0 && o.switch_prob <= 1))
    throw ConfigError(str("mixup_switch_prob must be in [0, 1], not ", o.switch_prob));
  if (o.off_epoch < 0) throw ConfigError(str("mixup_off_epoch must be >= 0, not ", o.off_epoch));
}

double beta_draw(SampleRng& rng, double a) {
  const double x = gamma_draw(rng, a), y = gamma_draw(rng, a);
  return x / (x + y);
}

MixDraw cutmix_box(double lambda, int height, int width, int cy, int cx) {
  const double ratio = std::sqrt(1.0 - lambda);
  const int cut_h = static_cast<int>(height * ratio), cut_w = static_cast<int>(width * ratio);
  const int y0 = std::clamp(cy - cut_h / 2, 0, height), y1 = std::clamp(cy + (cut_h + 1) / 2, 0, height);
  const int x0 = std::clamp(cx - cut_w / 2, 0, width), x1 = std::clamp(cx + (cut_w + 1) / 2, 0, width);
  MixDraw d;
  d.cutmix = true;
  d.top = y0;
  d.left = x0;
  d.height = y1 - y0;
  d.width = x1 - x0;
  d.lambda = 1.0 - static_cast<double>(d.height) * d.width / (static_cast<double>(height) * width);
  return d;
}

MixDraw draw_mix(const MixOptions& o, int height, int width, uint64_t seed, int64_t epoch, uint64_t batch_index) {
  if (mixing_off(o, epoch)) return {};
  SampleRng rng(seed, static_cast<uint64_t>(epoch), batch_index, RngStream::kMix);
  return draw_one(rng, o, height, width);
}

void mix_batch(const MixDraw& d, const BatchSpec& s, int n, void* data) {
  if (d.lambda == 1 || n <= 0) return;
  const size_t sample = s.sample_bytes();
  char* base = static_cast<char*>(data);
  const int pairs = (n + 1) / 2;  // the middle sample of an odd batch pairs with itself
  tbb::parallel_for(0, pairs, [&](int i) {
    mix_pair(d, s, base + sample * static_cast<size_t>(i), base + sample * static_cast<size_t>(n - 1 - i));
  });
}

std::vector<MixDraw> draw_mixes(const MixOptions& o, int height, int width, int n, uint64_t seed, int64_t epoch,
                                uint64_t batch_index) {
  const int units = o.mode == MixMode::kBatch ? 1 : o.mode == MixMode::kPair ? (n + 1) / 2 : n;
  std::vector<MixDraw> draws(static_cast<size_t>(std::max(units, 0)));
  if (mixing_off(o, epoch)) return draws;
  SampleRng rng(seed, static_cast<uint64_t>(epoch), batch_index, RngStream::kMix);
  for (MixDraw& d : draws) d = draw_one(rng, o, height, width);
  return draws;
}

void mix_samples(MixMode mode, const std::vector<MixDraw>& draws, const BatchSpec& s, int n, void* data) {
  if (n <= 0) return;
  if (mode == MixMode::kBatch) {
    FASTNN_CHECK(draws.size() == 1, "mixup: batch mode takes one draw, got ", draws.size());
    return mix_batch(draws[0], s, n, data);
  }
  const int pairs = (n + 1) / 2;
  FASTNN_CHECK(draws.size() == static_cast<size_t>(mode == MixMode::kPair ? pairs : n), "mixup: ", draws.size(),
               " draws for ", n, " samples");
  const size_t sample = s.sample_bytes();
  char* base = static_cast<char*>(data);
  tbb::parallel_for(0, pairs, [&](int i) {
    char* a = base + sample * static_cast<size_t>(i);
    char* b = base + sample * static_cast<size_t>(n - 1 - i);
    if (mode == MixMode::kPair) return mix_pair(draws[static_cast<size_t>(i)], s, a, b);
    const MixDraw &da = draws[static_cast<size_t>(i)], &db = draws[static_cast<size_t>(n - 1 - i)];
    if (da.lambda == 1 && db.lambda == 1) return;
    // Each side mixes with the other's unmixed image (timm's x_orig), copied only where the other mixes.
    std::vector<char> original_a, original_b;
    if (db.lambda != 1) original_a.assign(a, a + sample);
    if (da.lambda != 1) original_b.assign(b, b + sample);
    mix_one(da, s, a, original_b.data());
    if (a != b) mix_one(db, s, b, original_a.data());
  });
}

std::vector<double> own_label_weights(MixMode mode, const std::vector<MixDraw>& draws, int n) {
  std::vector<double> w(static_cast<size_t>(std::max(n, 0)), 1.0);
  for (int i = 0; i < n; ++i) {
    const int unit = mode == MixMode::kBatch ? 0 : mode == MixMode::kPair ? std::min(i, n - 1 - i) : i;
    w[static_cast<size_t>(i)] = draws.at(static_cast<size_t>(unit)).lambda;
  }
  return w;
}

}  // namespace fastnn::pipeline
