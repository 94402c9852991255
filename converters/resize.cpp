#include "converters/resize.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace fastnn::converters {
namespace {

// For each output index: the source range it covers and the weight of each source pixel in it.
struct Taps {
  std::vector<int> first;      // first source index per output
  std::vector<int> count;      // number of source pixels per output
  std::vector<float> weights;  // concatenated, `count[i]` per output, summing to 1
  std::vector<int> offset;     // start of output i's weights
};

Taps make_taps(int src, int dst) {
  Taps t;
  const double scale = static_cast<double>(src) / dst;
  for (int o = 0; o < dst; ++o) {
    double lo = o * scale, hi = (o + 1) * scale;
    int a = static_cast<int>(std::floor(lo));
    int b = std::min(src, static_cast<int>(std::ceil(hi - 1e-9)));
    t.first.push_back(a);
    t.count.push_back(b - a);
    t.offset.push_back(static_cast<int>(t.weights.size()));
    for (int s = a; s < b; ++s) {
      double w = std::min<double>(hi, s + 1) - std::max<double>(lo, s);
      t.weights.push_back(static_cast<float>(w / scale));
    }
  }
  return t;
}

}  // namespace

void resize_area(const uint8_t* src, int sw, int sh, int c, uint8_t* dst, int dw, int dh, std::vector<float>* scratch) {
  FASTNN_CHECK(dw >= 1 && dh >= 1 && dw <= sw && dh <= sh && c >= 1 && c <= 4, "resize_area: ", sw, "x", sh, " -> ",
               dw, "x", dh, " (downscale only)");
  const Taps tx = make_taps(sw, dw), ty = make_taps(sh, dh);
  // Horizontal pass: sh rows of dw pixels.
  scratch->assign(static_cast<size_t>(sh) * dw * c, 0.f);
  float* tmp = scratch->data();
  for (int y = 0; y < sh; ++y) {
    const uint8_t* row = src + static_cast<size_t>(y) * sw * c;
    float* out = tmp + static_cast<size_t>(y) * dw * c;
    for (int x = 0; x < dw; ++x) {
      const float* w = tx.weights.data() + tx.offset[x];
      for (int k = 0; k < tx.count[x]; ++k) {
        const uint8_t* px = row + static_cast<size_t>(tx.first[x] + k) * c;
        for (int ch = 0; ch < c; ++ch) out[x * c + ch] += w[k] * px[ch];
      }
    }
  }
  // Vertical pass.
  std::vector<float> acc(static_cast<size_t>(dw) * c);
  for (int y = 0; y < dh; ++y) {
    std::fill(acc.begin(), acc.end(), 0.f);
    const float* w = ty.weights.data() + ty.offset[y];
    for (int k = 0; k < ty.count[y]; ++k) {
      const float* in = tmp + static_cast<size_t>(ty.first[y] + k) * dw * c;
      for (size_t i = 0; i < acc.size(); ++i) acc[i] += w[k] * in[i];
    }
    uint8_t* out = dst + static_cast<size_t>(y) * dw * c;
    for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<uint8_t>(std::clamp(std::lround(acc[i]), 0l, 255l));
  }
}

void shorter_side_size(int w, int h, int shorter, int* out_w, int* out_h) {
  FASTNN_CHECK(w > 0 && h > 0 && shorter > 0, "shorter_side_size: bad sizes");
  if (w <= h) {
    *out_w = shorter;
    *out_h = std::max(1, static_cast<int>(std::lround(static_cast<double>(h) * shorter / w)));
  } else {
    *out_h = shorter;
    *out_w = std::max(1, static_cast<int>(std::lround(static_cast<double>(w) * shorter / h)));
  }
}

}  // namespace fastnn::converters
