#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/conv_output_range.h"
#include "trainer/ops/depthwise_conv2d.h"

namespace fastnn::ops {

namespace cpu {
namespace {

// body(item) for item in [0, count), one task per item (a plane is thousands of multiply-adds).
template <typename F>
void for_each_plane(int64_t count, F&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, 1), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) body(i);
  });
}

}  // namespace

template <typename T>
void depthwise_conv2d_forward_reference(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  for_each_plane(p.n * K, [&](int64_t nk) {
    const int64_t n = nk / K, k = nk % K;
    const T* xp = x + (n * p.c + k / p.multiplier) * hw;
    const T* wk = w + k * rs;
    T* yp = y + nk * pq;
    const T bias = b ? b[k] : T(0);
    for (int64_t op = 0; op < g.p; ++op) {
      T* yrow = yp + op * g.q;
      std::fill(yrow, yrow + g.q, bias);
      for (int64_t r = 0; r < g.r; ++r) {
        const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
        if (ih < 0 || ih >= p.h) continue;
        const T* xrow = xp + ih * p.w;
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t off = s * g.dil_w - g.pad_left;
          int64_t lo, hi;
          valid_output_range(off, g.stride_w, p.w, g.q, lo, hi);
          const T wv = wk[r * g.s + s];
          if (g.stride_w == 1) {
            const T* xs = xrow + off;
            for (int64_t q = lo; q < hi; ++q) yrow[q] += wv * xs[q];
          } else {
            for (int64_t q = lo; q < hi; ++q) yrow[q] += wv * xrow[q * g.stride_w + off];
          }
        }
      }
    }
  });
}

template <typename T>
void depthwise_conv2d_backward_data_reference(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  for_each_plane(p.n * p.c, [&](int64_t nc) {
    const int64_t n = nc / p.c, c = nc % p.c;
    T* dxp = dx + nc * hw;
    std::fill(dxp, dxp + hw, T(0));
    for (int64_t m = 0; m < p.multiplier; ++m) {
      const int64_t k = c * p.multiplier + m;
      const T* dyp = dy + (n * K + k) * pq;
      const T* wk = w + k * rs;
      for (int64_t op = 0; op < g.p; ++op) {
        const T* dyrow = dyp + op * g.q;
        for (int64_t r = 0; r < g.r; ++r) {
          const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
          if (ih < 0 || ih >= p.h) continue;
          T* dxrow = dxp + ih * p.w;
          for (int64_t s = 0; s < g.s; ++s) {
            const int64_t off = s * g.dil_w - g.pad_left;
            int64_t lo, hi;
            valid_output_range(off, g.stride_w, p.w, g.q, lo, hi);
            const T wv = wk[r * g.s + s];
            if (g.stride_w == 1) {
              T* ds = dxrow + off;
              for (int64_t q = lo; q < hi; ++q) ds[q] += wv * dyrow[q];
            } else {
              for (int64_t q = lo; q < hi; ++q) dxrow[q * g.stride_w + off] += wv * dyrow[q];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void depthwise_conv2d_backward_filter_reference(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  for_each_plane(K, [&](int64_t k) {
    const int64_t c = k / p.multiplier;
    if (dw) {
      std::vector<double> acc(static_cast<size_t>(rs), 0.0);
      for (int64_t n = 0; n < p.n; ++n) {
        const T* xp = x + (n * p.c + c) * hw;
        const T* dyp = dy + (n * K + k) * pq;
        for (int64_t op = 0; op < g.p; ++op) {
          const T* dyrow = dyp + op * g.q;
          for (int64_t r = 0; r < g.r; ++r) {
            const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
            if (ih < 0 || ih >= p.h) continue;
            const T* xrow = xp + ih * p.w;
            for (int64_t s = 0; s < g.s; ++s) {
              const int64_t off = s * g.dil_w - g.pad_left;
              int64_t lo, hi;
              valid_output_range(off, g.stride_w, p.w, g.q, lo, hi);
              // A row's partial sum in T (vectorised), rows summed in double.
              T part = T(0);
              if (g.stride_w == 1) {
                const T* xs = xrow + off;
                for (int64_t q = lo; q < hi; ++q) part += dyrow[q] * xs[q];
              } else {
                for (int64_t q = lo; q < hi; ++q) part += dyrow[q] * xrow[q * g.stride_w + off];
              }
              acc[static_cast<size_t>(r * g.s + s)] += static_cast<double>(part);
            }
          }
        }
      }
      for (int64_t i = 0; i < rs; ++i) dw[k * rs + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    }
    if (db) {
      double acc = 0;
      for (int64_t n = 0; n < p.n; ++n) {
        const T* d = dy + (n * K + k) * pq;
        T part = T(0);
        for (int64_t i = 0; i < pq; ++i) part += d[i];
        acc += static_cast<double>(part);
      }
      db[k] = static_cast<T>(acc);
    }
  });
}

// ---- Fast path: a padded, stride-phased copy of each plane ------------------------------------
namespace {
//
// Every tap (r, s) of output row p reads input row p*stride_h - pad_top + r*dil_h at columns
// q*stride_w + s*dil_w - pad_left. The plane is copied once into a zero-padded buffer whose columns are
// split into stride_w phases (phase j holds padded columns j, j + stride_w, ...), so every tap reads a
// contiguous run of Q values with no bounds: tap (r, s) of output (p, q) is
//   buf[((p*stride_h + r*dil_h) * stride_w + j) * qw + q + c0], j = (s*dil_w) % stride_w, c0 = (s*dil_w) / stride_w.
// The loops then vectorise over q (3x3 taps accumulate in registers), which the bounds-checked
// reference loops (kept above as *_reference, the differential tests' oracle) could not do for
// stride 2 or for the 1x1 - 8x8 planes of MobileNet's last layers.
struct PhasedPlane {
  int64_t rows = 0, sw = 1, qw = 0;  // padded rows, phases, columns per phase
  int64_t pad_top = 0, pad_left = 0;
  int64_t size() const { return rows * sw * qw; }
};

PhasedPlane phased_plane(const DepthwiseConv2dParams& p) {
  const Window2d& g = p.win;
  PhasedPlane f;
  f.rows = (g.p - 1) * g.stride_h + (g.r - 1) * g.dil_h + 1;
  const int64_t cols = (g.q - 1) * g.stride_w + (g.s - 1) * g.dil_w + 1;
  f.sw = g.stride_w;
  f.qw = (cols + f.sw - 1) / f.sw;
  f.pad_top = g.pad_top;
  f.pad_left = g.pad_left;
  return f;
}

// buf <- the plane x [h, w], zero outside the image. Per phase the image columns are one range
// [c_lo, c_hi) of buffer columns, found once per row: no test per element.
template <typename T>
void load_phased(const PhasedPlane& f, const T* x, int64_t h, int64_t w, T* buf) {
  for (int64_t row = 0; row < f.rows; ++row) {
    const int64_t ih = row - f.pad_top;
    T* dst = buf + row * f.sw * f.qw;
    if (ih < 0 || ih >= h) {
      std::fill(dst, dst + f.sw * f.qw, T(0));
      continue;
    }
    const T* src = x + ih * w;
    for (int64_t j = 0; j < f.sw; ++j) {
      T* d = dst + j * f.qw;
      // iw = c*sw + j - pad_left in [0, w)  <=>  c in [ceil((pad_left - j) / sw), ceil((w + pad_left - j) / sw))
      const int64_t lo_num = f.pad_left - j, hi_num = w + f.pad_left - j;
      const int64_t c_lo = std::clamp<int64_t>(lo_num <= 0 ? 0 : (lo_num + f.sw - 1) / f.sw, 0, f.qw);
      const int64_t c_hi = std::clamp<int64_t>(hi_num <= 0 ? 0 : (hi_num + f.sw - 1) / f.sw, c_lo, f.qw);
      std::fill(d, d + c_lo, T(0));
      const T* s0 = src + j - f.pad_left;
      if (f.sw == 1) {
        std::copy(s0 + c_lo, s0 + c_hi, d + c_lo);
      } else {
        for (int64_t c = c_lo; c < c_hi; ++c) d[c] = s0[c * f.sw];
      }
      std::fill(d + c_hi, d + f.qw, T(0));
    }
  }
}

// dx [h, w] <- the image part of buf (the padding's gradient is dropped).
template <typename T>
void store_phased(const PhasedPlane& f, const T* buf, int64_t h, int64_t w, T* dx) {
  for (int64_t ih = 0; ih < h; ++ih) {
    const int64_t row = ih + f.pad_top;
    T* d = dx + ih * w;
    if (row < 0 || row >= f.rows) {
      std::fill(d, d + w, T(0));
      continue;
    }
    const T* src = buf + row * f.sw * f.qw;
    for (int64_t j = 0; j < f.sw; ++j) {  // columns iw = c*sw + j - pad_left
      const int64_t lo_num = f.pad_left - j, hi_num = w + f.pad_left - j;
      const int64_t c_lo = std::clamp<int64_t>(lo_num <= 0 ? 0 : (lo_num + f.sw - 1) / f.sw, 0, f.qw);
      const int64_t c_hi = std::clamp<int64_t>(hi_num <= 0 ? 0 : (hi_num + f.sw - 1) / f.sw, c_lo, f.qw);
      const T* sj = src + j * f.qw;
      T* d0 = d + j - f.pad_left;
      for (int64_t c = c_lo; c < c_hi; ++c) d0[c * f.sw] = sj[c];
    }
    // Image columns past the buffer (VALID padding leaves them unread): no gradient.
    for (int64_t iw = std::max<int64_t>(0, f.sw * f.qw - f.pad_left); iw < w; ++iw) d[iw] = T(0);
  }
}

// Offset in the phased buffer of tap (r, s) for output row 0, column 0.
inline int64_t tap_offset(const Window2d& g, const PhasedPlane& f, int64_t r, int64_t s) {
  const int64_t o = s * g.dil_w;
  return ((r * g.dil_h) * f.sw + o % f.sw) * f.qw + o / f.sw;
}

// One output plane [P, Q] = bias + the R*S taps of a phased buffer (forward; and backward data at
// stride 1, where it is the correlation of the padded dy with the flipped filter).
template <typename T>
void conv_plane(const Window2d& g, const PhasedPlane& f, const T* buf, const int64_t* taps, const T* wk, T bias,
                T* yp) {
  const int64_t rs = g.r * g.s, row_step = g.stride_h * f.sw * f.qw;
  if (rs == 9) {  // 3x3: the nine taps in registers, one pass over the output row
    const T w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3], w4 = wk[4], w5 = wk[5], w6 = wk[6], w7 = wk[7], w8 = wk[8];
    for (int64_t op = 0; op < g.p; ++op) {
      const T* __restrict base = buf + op * row_step;
      const T *t0 = base + taps[0], *t1 = base + taps[1], *t2 = base + taps[2], *t3 = base + taps[3],
              *t4 = base + taps[4], *t5 = base + taps[5], *t6 = base + taps[6], *t7 = base + taps[7],
              *t8 = base + taps[8];
      T* __restrict yrow = yp + op * g.q;
      for (int64_t q = 0; q < g.q; ++q) {
        T a = bias;
        a += w0 * t0[q];
        a += w1 * t1[q];
        a += w2 * t2[q];
        a += w3 * t3[q];
        a += w4 * t4[q];
        a += w5 * t5[q];
        a += w6 * t6[q];
        a += w7 * t7[q];
        a += w8 * t8[q];
        yrow[q] = a;
      }
    }
    return;
  }
  for (int64_t op = 0; op < g.p; ++op) {
    const T* base = buf + op * row_step;
    T* __restrict yrow = yp + op * g.q;
    std::fill(yrow, yrow + g.q, bias);
    for (int64_t t = 0; t < rs; ++t) {
      const T wv = wk[t];
      const T* __restrict src = base + taps[t];
      for (int64_t q = 0; q < g.q; ++q) yrow[q] += wv * src[q];
    }
  }
}

std::vector<int64_t> tap_offsets(const Window2d& g, const PhasedPlane& f) {
  std::vector<int64_t> taps(static_cast<size_t>(g.r * g.s));
  for (int64_t r = 0; r < g.r; ++r)
    for (int64_t s = 0; s < g.s; ++s) taps[static_cast<size_t>(r * g.s + s)] = tap_offset(g, f, r, s);
  return taps;
}

// Planes [0, count) in chunks of about 32k multiply-adds per task, each chunk with its own buffer.
template <typename T, typename F>
void for_each_plane_chunk(int64_t count, int64_t plane_work, int64_t buf_elems, F&& body) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, plane_work));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, grain), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<T> buf(static_cast<size_t>(buf_elems));
    for (int64_t i = r.begin(); i < r.end(); ++i) body(i, buf.data());
  });
}

}  // namespace

template <typename T>
void depthwise_conv2d_forward(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y) {
  const Window2d& g = p.win;
  const PhasedPlane f = phased_plane(p);
  const int64_t K = p.k(), M = p.multiplier, hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  const std::vector<int64_t> taps = tap_offsets(g, f);
  for_each_plane_chunk<T>(p.n * p.c, M * pq * rs, f.size(), [&](int64_t nc, T* buf) {
    load_phased(f, x + nc * hw, p.h, p.w, buf);
    const int64_t n = nc / p.c, c = nc % p.c;
    for (int64_t m = 0; m < M; ++m) {
      const int64_t k = c * M + m;
      conv_plane(g, f, buf, taps.data(), w + k * rs, b ? b[k] : T(0), y + (n * K + k) * pq);
    }
  });
}

template <typename T>
void depthwise_conv2d_backward_data(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), M = p.multiplier, hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  // Stride 1, one filter per channel (MobileNet's stride-1 layers): dx[i][j] = sum w[r][s] *
  // dy[i + pad_top - r*dil_h][j + pad_left - s*dil_w], the forward's gather with the filter flipped over
  // dy padded by (R-1)*dil_h - pad_top rows above and (S-1)*dil_w - pad_left columns left; one pass per
  // dx row, the taps in registers.
  const int64_t top = (g.r - 1) * g.dil_h - g.pad_top, left = (g.s - 1) * g.dil_w - g.pad_left;
  if (g.stride_h == 1 && g.stride_w == 1 && M == 1 && top >= 0 && left >= 0) {
    Window2d gb = g;  // dx as the output of a stride-1 window over dy
    gb.p = p.h, gb.q = p.w;
    gb.pad_top = top, gb.pad_left = left;
    PhasedPlane f;
    f.rows = p.h + (g.r - 1) * g.dil_h;
    f.sw = 1;
    f.qw = p.w + (g.s - 1) * g.dil_w;
    f.pad_top = top, f.pad_left = left;
    const std::vector<int64_t> taps = tap_offsets(gb, f);
    for_each_plane_chunk<T>(p.n * p.c, hw * rs, f.size(), [&](int64_t nc, T* buf) {
      load_phased(f, dy + nc * pq, g.p, g.q, buf);
      T flipped[64];
      std::vector<T> big;
      T* wf = flipped;
      if (rs > 64) big.resize(static_cast<size_t>(rs)), wf = big.data();
      const T* wk = w + (nc % p.c) * rs;
      for (int64_t t = 0; t < rs; ++t) wf[t] = wk[rs - 1 - t];
      conv_plane(gb, f, buf, taps.data(), wf, T(0), dx + nc * hw);
    });
    return;
  }
  // Otherwise a task owns the (n, c) plane of dx: it scatters its M output channels' gradients into the
  // phased buffer (contiguous axpys, no bounds), then copies the image part out.
  const PhasedPlane f = phased_plane(p);
  const int64_t row_step = g.stride_h * f.sw * f.qw;
  const std::vector<int64_t> taps = tap_offsets(g, f);
  for_each_plane_chunk<T>(p.n * p.c, M * pq * rs, f.size(), [&](int64_t nc, T* buf) {
    std::fill(buf, buf + f.size(), T(0));
    const int64_t n = nc / p.c, c = nc % p.c;
    for (int64_t m = 0; m < M; ++m) {
      const int64_t k = c * M + m;
      const T* dyp = dy + (n * K + k) * pq;
      const T* wk = w + k * rs;
      for (int64_t op = 0; op < g.p; ++op) {
        const T* __restrict dyrow = dyp + op * g.q;
        T* base = buf + op * row_step;
        for (int64_t t = 0; t < rs; ++t) {
          const T wv = wk[t];
          T* __restrict dst = base + taps[static_cast<size_t>(t)];
          for (int64_t q = 0; q < g.q; ++q) dst[q] += wv * dyrow[q];
        }
      }
    }
    store_phased(f, buf, p.h, p.w, dx + nc * hw);
  });
}

template <typename T>
void depthwise_conv2d_backward_filter(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db) {
  const Window2d& g = p.win;
  const PhasedPlane f = phased_plane(p);
  const int64_t K = p.k(), M = p.multiplier, hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  const int64_t row_step = g.stride_h * f.sw * f.qw;
  const std::vector<int64_t> taps = tap_offsets(g, f);
  // A task owns output channel k and walks the batch in sample order. Per sample, each tap keeps Q
  // lane sums in T over the rows (vectorised multiply-adds), then adds the lanes in double: the
  // result does not depend on the thread count.
  const int64_t lanes = rs * g.q;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, K, 1), [&](const tbb::blocked_range<int64_t>& range) {
    std::vector<T> buf(static_cast<size_t>(f.size())), lane(static_cast<size_t>(lanes));
    std::vector<double> acc(static_cast<size_t>(rs));
    for (int64_t k = range.begin(); k < range.end(); ++k) {
      const int64_t c = k / M;
      if (dw) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t n = 0; n < p.n; ++n) {
          load_phased(f, x + (n * p.c + c) * hw, p.h, p.w, buf.data());
          const T* dyp = dy + (n * K + k) * pq;
          std::fill(lane.begin(), lane.end(), T(0));
          for (int64_t op = 0; op < g.p; ++op) {
            const T* __restrict dyrow = dyp + op * g.q;
            const T* base = buf.data() + op * row_step;
            for (int64_t t = 0; t < rs; ++t) {
              const T* __restrict src = base + taps[static_cast<size_t>(t)];
              T* __restrict l = lane.data() + t * g.q;
              for (int64_t q = 0; q < g.q; ++q) l[q] += dyrow[q] * src[q];
            }
          }
          for (int64_t t = 0; t < rs; ++t) {
            const T* l = lane.data() + t * g.q;
            double sum = 0;
            for (int64_t q = 0; q < g.q; ++q) sum += static_cast<double>(l[q]);
            acc[static_cast<size_t>(t)] += sum;
          }
        }
        for (int64_t t = 0; t < rs; ++t) dw[k * rs + t] = static_cast<T>(acc[static_cast<size_t>(t)]);
      }
      if (db) {
        double a = 0;
        for (int64_t n = 0; n < p.n; ++n) {
          const T* d = dy + (n * K + k) * pq;
          T part = T(0);
          for (int64_t i = 0; i < pq; ++i) part += d[i];
          a += static_cast<double>(part);
        }
        db[k] = static_cast<T>(a);
      }
    }
  });
}

#define FASTNN_DWCONV_INSTANTIATE(T)                                                                             \
  template void depthwise_conv2d_forward<T>(const DepthwiseConv2dParams&, const T*, const T*, const T*, T*);   \
  template void depthwise_conv2d_backward_data<T>(const DepthwiseConv2dParams&, const T*, const T*, T*);       \
  template void depthwise_conv2d_backward_filter<T>(const DepthwiseConv2dParams&, const T*, const T*, T*, T*); \
  template void depthwise_conv2d_forward_reference<T>(const DepthwiseConv2dParams&, const T*, const T*, const T*, \
                                                      T*);                                                     \
  template void depthwise_conv2d_backward_data_reference<T>(const DepthwiseConv2dParams&, const T*, const T*, T*); \
  template void depthwise_conv2d_backward_filter_reference<T>(const DepthwiseConv2dParams&, const T*, const T*, T*, \
                                                              T*);
FASTNN_DWCONV_INSTANTIATE(float)
FASTNN_DWCONV_INSTANTIATE(double)
#undef FASTNN_DWCONV_INSTANTIATE

}  // namespace cpu

namespace {

template <typename T>
class DepthwiseConv2dCpu final : public OpKernel {
 public:
  DepthwiseConv2dCpu(const DepthwiseConv2dParams& p, DType dt) : OpKernel("depthwise_conv2d", Device::kCpu), p_(p) {
    sig_ = depthwise_conv2d_signature(p, dt);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::depthwise_conv2d_forward<T>(p_, a.inputs[0].data<T>(), a.params[0].data<T>(),
                                     p_.bias ? a.params[1].data<T>() : nullptr, a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    const T* dy = a.d_outputs[0].data<T>();
    if (a.d_inputs[0].defined())
      cpu::depthwise_conv2d_backward_data<T>(p_, a.params[0].data<T>(), dy, a.d_inputs[0].data<T>());
    T* dw = a.d_params[0].defined() ? a.d_params[0].data<T>() : nullptr;
    T* db = p_.bias && a.d_params[1].defined() ? a.d_params[1].data<T>() : nullptr;
    if (dw || db) cpu::depthwise_conv2d_backward_filter<T>(p_, a.inputs[0].data<T>(), dy, dw, db);
  }

 private:
  DepthwiseConv2dParams p_;
};

std::vector<OpCase> depthwise_conv2d_cases() {
  return {
      {"k3_same", {{"kernel", 3}, {"padding", "same"}}, {{{2, 3, 5, 6}}}},
      {"k3_s2_same_nobias", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}, {"bias", false}}, {{{2, 4, 7, 6}}}},
      {"k3_s2_same_even", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{1, 2, 8, 8}}}},
      {"k3_valid", {{"kernel", 3}}, {{{2, 2, 5, 5}}}},
      {"m2_k3x2_s21", {{"kernel", Ints{3, 2}}, {"stride", Ints{2, 1}}, {"multiplier", 2}, {"padding", Ints{1, 0}}},
       {{{2, 3, 6, 5}}}},
      {"k5_d2_asym", {{"kernel", 5}, {"dilation", 2}, {"padding", Ints{2, 3, 1, 4}}}, {{{1, 2, 7, 6}}}},
      {"k1", {{"kernel", 1}, {"multiplier", 3}}, {{{2, 2, 3, 3}}}},
  };
}

}  // namespace

void register_depthwise_conv2d(OpRegistry& r) {
  r.add(OpDef{
      .name = "depthwise_conv2d",
      .summary = "depthwise 2-D convolution (one input channel per group, channel multiplier), NCHW, direct kernels",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const DepthwiseConv2dParams p = depthwise_conv2d_params(a, in);
                     const DType dt = compute_dtype("depthwise_conv2d", in);
                     return make_cpu_kernel<DepthwiseConv2dCpu>("depthwise_conv2d", dt, p, dt);
                   }}},
      .test_cases = depthwise_conv2d_cases,
  });
#ifdef FASTNN_HAVE_DNNL
  register_depthwise_conv2d_dnnl(r);
#endif
#ifdef FASTNN_HAVE_CUDA
  register_depthwise_conv2d_cuda(r);
#endif
}

}  // namespace fastnn::ops
