#include "pipeline/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/check.h"
#include "pipeline/half.h"

namespace fastnn::pipeline {
namespace {

template <int C>
void jitter_row(float* row, int n, const ColorJitter& c) {
  if constexpr (C == 3) {
    for (int i = 0; i < n; ++i) {
      float* p = row + 3 * i;
      float r = p[0] + c.brightness, g = p[1] + c.brightness, b = p[2] + c.brightness;
      float y = 0.299f * r + 0.587f * g + 0.114f * b;
      p[0] = std::clamp(y + c.saturation * (r - y), 0.0f, 255.0f);
      p[1] = std::clamp(y + c.saturation * (g - y), 0.0f, 255.0f);
      p[2] = std::clamp(y + c.saturation * (b - y), 0.0f, 255.0f);
    }
  } else {
    // Saturation needs colour; brightness alone applies to any channel count.
    for (int i = 0; i < n * C; ++i) row[i] = std::clamp(row[i] + c.brightness, 0.0f, 255.0f);
  }
}

inline uint8_t to_u8(float v) { return static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f) + 0.5f); }

// to_u8 over a contiguous row. The compiler leaves the float -> uint8 conversion scalar (about 170 us
// of an inception-preset 224x224x3 sample, 15% of the whole decode + augment); with SSE2, 16 values at
// a time: the same clamp, + 0.5 and truncation (cvttps), then packs that cannot saturate (0..255), so
// the bytes equal to_u8's.
void to_u8_row(const float* src, int n, uint8_t* dst) {
  int i = 0;
#if defined(__SSE2__)
  const __m128 lo = _mm_setzero_ps(), hi = _mm_set1_ps(255.0f), half = _mm_set1_ps(0.5f);
  for (; i + 16 <= n; i += 16) {
    __m128i q[4];
    for (int k = 0; k < 4; ++k) {
      const __m128 v = _mm_loadu_ps(src + i + 4 * k);
      q[k] = _mm_cvttps_epi32(_mm_add_ps(_mm_min_ps(_mm_max_ps(v, lo), hi), half));
    }
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), bytes);
  }
#endif
  for (; i < n; ++i) dst[i] = to_u8(src[i]);
}

// Batch memory is written once and read by someone else (the trainer, a device copy): stream it
// past the caches. Plain stores would first read every destination line (write-allocate) and evict
// the decoder's working set — measurably slower than the bare loop writing one hot buffer.
void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  for (; bytes >= 16; bytes -= 16, d += 16, s += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Converts one output row (HWC floats) to the batch dtype and layout in `tmp`, then streams it into
// the slot. mean_row / scale_row: the per-channel mean and 1/std repeated along an NHWC row, so the
// conversions are element-wise loops the compiler vectorises.
template <int C>
void store(const float* row, int oy, const OutputFormat& f, const float* mean_row, const float* scale_row,
           unsigned char* tmp, void* slot) {
  const int ow = f.spec.width, oh = f.spec.height;
  const size_t es = dtype_size(f.spec.dtype);
  auto* base = static_cast<unsigned char*>(slot);
  auto convert = [&](const float* src, int n, int stride, const float* m, const float* sc, bool per_elem) {
    switch (f.spec.dtype) {
      case DType::kU8:
        if (stride == 1) {
          to_u8_row(src, n, tmp);
        } else {
          for (int i = 0; i < n; ++i) tmp[i] = to_u8(src[i * stride]);
        }
        break;
      case DType::kF32: {
        auto* t = reinterpret_cast<float*>(tmp);
        for (int i = 0; i < n; ++i) t[i] = (src[i * stride] - m[per_elem ? i : 0]) * sc[per_elem ? i : 0];
        break;
      }
      case DType::kF16: {
        auto* t = reinterpret_cast<uint16_t*>(tmp);
        for (int i = 0; i < n; ++i) t[i] = float_to_half((src[i * stride] - m[per_elem ? i : 0]) * sc[per_elem ? i : 0]);
        break;
      }
      default: break;  // output_format() admits the three above only
    }
  };
  auto put = [&](unsigned char* dst, size_t bytes) {
    if (f.stream_stores) stream_copy(dst, tmp, bytes);
    else std::memcpy(dst, tmp, bytes);
  };
  if (f.spec.layout == Layout::kNHWC) {
    convert(row, ow * C, 1, mean_row, scale_row, true);
    put(base + static_cast<size_t>(oy) * ow * C * es, static_cast<size_t>(ow) * C * es);
  } else {
    const size_t plane = static_cast<size_t>(ow) * oh * es;
    for (int c = 0; c < C; ++c) {
      convert(row + c, ow, C, f.mean + c, f.inv_std + c, false);
      put(base + plane * c + static_cast<size_t>(oy) * ow * es, static_cast<size_t>(ow) * es);
    }
  }
}

// The horizontal pass: out pixel ox = a + t · (b − a) per channel, a and b the two source pixels of
// the vertically blended row. For 3 and 4 channels with SSE2, a pixel's channels go 4 lanes at a time
// with the same multiply and adds (bitwise the scalar loop's: no fused multiply-add on either path);
// for 3 channels the fourth lane reads the next source value and writes the next output value, which
// the next pixel overwrites (the rows carry 4 floats of slack for the last one).
template <int C>
void gather_row(const float* vrow, const int32_t* xa, const int32_t* xb, const float* w, int ow, float* out) {
#if defined(__SSE2__)
  if constexpr (C == 3 || C == 4) {
    for (int ox = 0; ox < ow; ++ox) {
      const __m128 a = _mm_loadu_ps(vrow + xa[ox]), b = _mm_loadu_ps(vrow + xb[ox]);
      _mm_storeu_ps(out + ox * C, _mm_add_ps(a, _mm_mul_ps(_mm_set1_ps(w[ox]), _mm_sub_ps(b, a))));
    }
    return;
  }
#endif
  for (int ox = 0; ox < ow; ++ox) {
    const float* pa = vrow + xa[ox];
    const float* pb = vrow + xb[ox];
    const float t = w[ox];
    for (int c = 0; c < C; ++c) out[ox * C + c] = pa[c] + t * (pb[c] - pa[c]);
  }
}

}  // namespace

bool Resampler::copy_mode(const Window& w, int out_w, int out_h) {
  return w.w == out_w && w.h == out_h && w.x0 == std::floor(w.x0) && w.y0 == std::floor(w.y0);
}

void Resampler::run(const ImageView& view, const Window& window, bool flip, const ColorJitter& color,
                    const OutputFormat& format, void* slot) {
  FASTNN_CHECK(view.channels == format.spec.channels, "resample: view has ", view.channels,
               " channels, output ", format.spec.channels);
  FASTNN_CHECK(view.width > 0 && view.height > 0, "resample: empty view");
  FASTNN_CHECK(window.w > 0 && window.h > 0, "resample: empty window");
  switch (view.channels) {
    case 1: run_c<1>(view, window, flip, color, format, slot); break;
    case 3: run_c<3>(view, window, flip, color, format, slot); break;
    case 4: run_c<4>(view, window, flip, color, format, slot); break;
    default: FASTNN_CHECK(false, "resample: ", view.channels, " channels (1, 3 or 4)");
  }
#if defined(__SSE2__)
  _mm_sfence();  // streamed stores are visible before the batch is handed over
#endif
}

template <int C>
void Resampler::run_c(const ImageView& v, const Window& win, bool flip, const ColorJitter& color,
                      const OutputFormat& f, void* slot) {
  const int ow = f.spec.width, oh = f.spec.height;
  out_row_.resize(static_cast<size_t>(ow) * C + 4);  // + 4: the 4-wide gather's last store (below)
  float* out = out_row_.data();
  mean_row_.resize(static_cast<size_t>(ow) * C);
  scale_row_.resize(static_cast<size_t>(ow) * C);
  for (int i = 0; i < ow * C; ++i) {
    mean_row_[i] = f.mean[i % C];
    scale_row_[i] = f.inv_std[i % C];
  }
  const float* mr = mean_row_.data();
  const float* sr = scale_row_.data();
  store_row_.resize(static_cast<size_t>(ow) * C * sizeof(float));
  unsigned char* tmp = store_row_.data();

  if (copy_mode(win, ow, oh)) {
    const long ix0 = static_cast<long>(win.x0), iy0 = static_cast<long>(win.y0);
    for (int oy = 0; oy < oh; ++oy) {
      const long sy = iy0 + oy;
      const bool row_in = sy >= 0 && sy < v.height;
      const uint8_t* s = row_in ? v.pixels + v.stride * static_cast<size_t>(sy) : nullptr;
      for (int ox = 0; ox < ow; ++ox) {
        const long sx = ix0 + (flip ? ow - 1 - ox : ox);
        float* o = out + ox * C;
        if (row_in && sx >= 0 && sx < v.width) {
          for (int c = 0; c < C; ++c) o[c] = s[sx * C + c];
        } else {
          for (int c = 0; c < C; ++c) o[c] = f.pad_value;
        }
      }
      if (color.enabled) jitter_row<C>(out, ow, color);
      store<C>(out, oy, f, mr, sr, tmp, slot);
    }
    return;
  }

  // Column coefficients, flip folded in.
  x0_.resize(ow);
  x1_.resize(ow);
  fx_.resize(ow);
  const double scale_x = win.w / ow, scale_y = win.h / oh;
  for (int ox = 0; ox < ow; ++ox) {
    int c = flip ? ow - 1 - ox : ox;
    double sx = std::clamp(win.x0 + (c + 0.5) * scale_x - 0.5, 0.0, static_cast<double>(v.width - 1));
    int i0 = static_cast<int>(sx);
    x0_[ox] = i0 * C;
    x1_[ox] = std::min(i0 + 1, v.width - 1) * C;
    fx_[ox] = static_cast<float>(sx - i0);
  }
  // Vertical first: blend the two source rows over the columns the taps touch (contiguous,
  // vectorises), then gather horizontally from that one float row.
  const int lo = std::min(x0_.front(), x0_.back()), hi = std::max(x1_.front(), x1_.back()) + C;
  row_a_.resize(static_cast<size_t>(v.width) * C + 4);  // + 4: the 4-wide gather's last loads
  float* vrow = row_a_.data();
  for (int oy = 0; oy < oh; ++oy) {
    double sy = std::clamp(win.y0 + (oy + 0.5) * scale_y - 0.5, 0.0, static_cast<double>(v.height - 1));
    int j0 = static_cast<int>(sy);
    int j1 = std::min(j0 + 1, v.height - 1);
    const float fy = static_cast<float>(sy - j0);
    const uint8_t* s0 = v.pixels + v.stride * static_cast<size_t>(j0);
    const uint8_t* s1 = v.pixels + v.stride * static_cast<size_t>(j1);
    if (fy == 0.0f || j1 == j0) {
      for (int i = lo; i < hi; ++i) vrow[i] = s0[i];
    } else {
      for (int i = lo; i < hi; ++i) {
        float a = s0[i];
        vrow[i] = a + fy * (static_cast<float>(s1[i]) - a);
      }
    }
    const int32_t* xa = x0_.data();
    const int32_t* xb = x1_.data();
    const float* w = fx_.data();
    gather_row<C>(vrow, xa, xb, w, ow, out);
    if (color.enabled) jitter_row<C>(out, ow, color);
    store<C>(out, oy, f, mr, sr, tmp, slot);
  }
}

}  // namespace fastnn::pipeline
