#include "pipeline/random_erase.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "pipeline/rng.h"

namespace fastnn::pipeline {
namespace {

float normal(SampleRng& rng) { return static_cast<float>(rng.normal()); }

// Writes normalised value v at element (y, x, c) of the sample.
void put(const OutputFormat& f, void* slot, int y, int x, int c, float v) {
  const BatchSpec& s = f.spec;
  const size_t at = s.layout == Layout::kNHWC
                        ? (static_cast<size_t>(y) * s.width + x) * s.channels + c
                        : (static_cast<size_t>(c) * s.height + y) * s.width + x;
  switch (s.dtype) {
    case DType::kF32:
      static_cast<float*>(slot)[at] = v;
      break;
    case DType::kF16:
      static_cast<uint16_t*>(slot)[at] = f32_to_f16_bits(v);
      break;
    case DType::kU8: {
      const float pixel = f.mean[c] + v / f.inv_std[c];
      static_cast<uint8_t*>(slot)[at] = static_cast<uint8_t>(std::clamp(std::lround(pixel), 0L, 255L));
      break;
    }
    default: break;  // output_format() admits the three above only
  }
}

}  // namespace

EraseMode parse_erase_mode(std::string_view name) {
  if (name == "const") return EraseMode::kConst;
  if (name == "rand") return EraseMode::kRand;
  if (name == "pixel") return EraseMode::kPixel;
  throw ConfigError(str("random erasing mode \"", name, "\": const, rand or pixel"));
}

const char* erase_mode_name(EraseMode mode) {
  return mode == EraseMode::kConst ? "const" : mode == EraseMode::kRand ? "rand" : "pixel";
}

EraseRect erase_sample(const EraseOptions& o, const OutputFormat& f, uint64_t seed, int64_t epoch, uint64_t index,
                       void* slot) {
  EraseRect r;
  if (o.prob <= 0) return r;
  SampleRng rng(seed, static_cast<uint64_t>(epoch), index, RngStream::kErase);
  if (rng.uniform() >= o.prob) return r;
  const int H = f.spec.height, W = f.spec.width, C = f.spec.channels;
  const double area = static_cast<double>(H) * W;
  const double log_lo = std::log(double(o.min_aspect)), log_hi = -log_lo;
  for (int attempt = 0; attempt < o.attempts && !r.erased; ++attempt) {
    const double target = area * (o.min_area + (o.max_area - o.min_area) * rng.uniform_double());
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * rng.uniform_double());
    const long h = std::lround(std::sqrt(target * aspect)), w = std::lround(std::sqrt(target / aspect));
    if (h < 1 || w < 1 || h >= H || w >= W) continue;
    r = {true, static_cast<int>(rng.below(static_cast<uint64_t>(H - h + 1))),
         static_cast<int>(rng.below(static_cast<uint64_t>(W - w + 1))), static_cast<int>(h), static_cast<int>(w)};
  }
  if (!r.erased) return r;
  float per_channel[4] = {0, 0, 0, 0};
  if (o.mode == EraseMode::kRand)
    for (int c = 0; c < C; ++c) per_channel[c] = normal(rng);
  for (int y = r.top; y < r.top + r.height; ++y)
    for (int x = r.left; x < r.left + r.width; ++x)
      for (int c = 0; c < C; ++c) put(f, slot, y, x, c, o.mode == EraseMode::kPixel ? normal(rng) : per_channel[c]);
  return r;
}

}  // namespace fastnn::pipeline
