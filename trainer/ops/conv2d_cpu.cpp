#include <algorithm>
#include <atomic>
#include <cstring>

#include <tbb/parallel_for.h>

#include "trainer/ops/conv2d.h"
#include "trainer/ops/conv_output_range.h"
#include "trainer/ops/part_marks.h"
#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {

namespace cpu {

int64_t conv2d_filter_lanes(const Conv2dParams& p) { return std::min<int64_t>(p.n, 8); }

namespace {

int64_t col_elems(const Conv2dParams& p) { return p.is_pointwise() ? 0 : p.col_rows() * p.col_cols(); }

}  // namespace

bool conv2d_batched_pointwise(const Conv2dParams& p) {
  return p.is_pointwise() && p.groups == 1 && p.n > 1 && p.col_cols() <= kBatchedPointwiseMaxPlane;
}

namespace {
// The packed [C, N*P*Q] and [K, N*P*Q] matrices of the batched pointwise path.
int64_t pack_elems(const Conv2dParams& p) {
  return conv2d_batched_pointwise(p) ? (p.c + p.k) * p.n * p.col_cols() : 0;
}
}  // namespace

int64_t conv2d_workspace_elems(const Conv2dParams& p, int64_t slots) {
  return std::max<int64_t>(1, slots) * col_elems(p) + (conv2d_filter_lanes(p) - 1) * p.weight_numel() +
         pack_elems(p);
}

int64_t conv2d_slots(const Conv2dParams& p, int64_t ws_elems) {
  const int64_t partials = (conv2d_filter_lanes(p) - 1) * p.weight_numel() + pack_elems(p), col = col_elems(p);
  FASTNN_CHECK(ws_elems >= partials + col, "conv2d: workspace of ", ws_elems, " scalars, needs at least ",
               partials + col);
  return col == 0 ? p.n : std::min(p.n, (ws_elems - partials) / col);
}

namespace {

// Stride 1 with output rows as wide as input rows (SAME convolutions): a column-buffer row is the
// input plane shifted by one constant offset, so im2col/col2im move whole planes at once and only
// fix up the few out-of-image margin elements per output row.
bool plane_shift(const Conv2dParams& p) { return p.win.stride_h == 1 && p.win.stride_w == 1 && p.win.q == p.w; }

// Tiny margin writes as plain stores: GCC would otherwise turn these loops into memset calls that
// cost more than the 1-2 elements they clear.
#if defined(__GNUC__) && !defined(__clang__)
#define FASTNN_NO_LIBCALL_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define FASTNN_NO_LIBCALL_LOOPS
#endif

// Zeroes [0, lo) and [hi, q) of rows [p_lo, p_hi) of a row-major [*, q] block.
template <typename T>
FASTNN_NO_LIBCALL_LOOPS void zero_margins(T* out, int64_t p_lo, int64_t p_hi, int64_t q, int64_t lo, int64_t hi) {
  // Column by column: the trip counts are tiny and vary with s, the row count does not.
  for (int64_t i = 0; i < lo; ++i)
    for (int64_t op = p_lo; op < p_hi; ++op) out[op * q + i] = T(0);
  for (int64_t i = hi; i < q; ++i)
    for (int64_t op = p_lo; op < p_hi; ++op) out[op * q + i] = T(0);
}

// col[((c*R + r)*S + s) * P*Q + p*Q + q] = x[c][p*sh - pt + r*dh][q*sw - pl + s*dw] (0 outside).
template <typename T>
void im2col(const Conv2dParams& prm, const T* x, T* col) {
  const Window2d& g = prm.win;
  const int64_t pq = g.p * g.q;
  const bool shift = plane_shift(prm);
  for (int64_t c = 0; c < prm.c; ++c) {
    const T* plane = x + c * prm.h * prm.w;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t off_h = r * g.dil_h - g.pad_top;
      int64_t p_lo, p_hi;
      valid_output_range(off_h, g.stride_h, prm.h, g.p, p_lo, p_hi);
      for (int64_t s = 0; s < g.s; ++s) {
        T* row = col + ((c * g.r + r) * g.s + s) * pq;
        const int64_t off_w = s * g.dil_w - g.pad_left;
        int64_t lo, hi;
        valid_output_range(off_w, g.stride_w, prm.w, g.q, lo, hi);
        if (lo == hi || p_lo == p_hi) {
          std::fill(row, row + pq, T(0));
          continue;
        }
        std::fill(row, row + p_lo * g.q, T(0));
        std::fill(row + p_hi * g.q, row + pq, T(0));
        if (shift) {
          // row[i] = plane[i + off_h*W + off_w]; the margins pick up neighbouring rows' pixels and are
          // cleared after. All reads stay inside the plane.
          const T* src = plane + off_h * prm.w + off_w;
          std::copy(src + p_lo * g.q + lo, src + (p_hi - 1) * g.q + hi, row + p_lo * g.q + lo);
          zero_margins(row, p_lo, p_hi, g.q, lo, hi);
          continue;
        }
        for (int64_t op = p_lo; op < p_hi; ++op) {
          T* out = row + op * g.q;
          const T* in = plane + (op * g.stride_h + off_h) * prm.w + off_w;
          std::fill(out, out + lo, T(0));
          if (g.stride_w == 1) {
            std::copy(in + lo, in + hi, out + lo);
          } else {
            for (int64_t q = lo; q < hi; ++q) out[q] = in[q * g.stride_w];
          }
          std::fill(out + hi, out + g.q, T(0));
        }
      }
    }
  }
}

// The adjoint of im2col: dx = 0, then dx[...] += col[...] for every in-image position. Leaves col all
// zero, so the next sample's GEMM can accumulate onto it (beta = 1) instead of clearing it first: the
// GEMM's separate clearing pass over the whole (larger than L2) buffer cost ~15% of this pass, while
// clearing here is a store into a line that is already in L1.
template <typename T>
void col2im(const Conv2dParams& prm, T* col, T* dx) {
  const Window2d& g = prm.win;
  const int64_t pq = g.p * g.q;
  const bool shift = plane_shift(prm);
  std::fill(dx, dx + prm.c * prm.h * prm.w, T(0));
  for (int64_t c = 0; c < prm.c; ++c) {
    T* plane = dx + c * prm.h * prm.w;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t off_h = r * g.dil_h - g.pad_top;
      int64_t p_lo, p_hi;
      valid_output_range(off_h, g.stride_h, prm.h, g.p, p_lo, p_hi);
      for (int64_t s = 0; s < g.s; ++s) {
        T* row = col + ((c * g.r + r) * g.s + s) * pq;
        const int64_t off_w = s * g.dil_w - g.pad_left;
        int64_t lo, hi;
        valid_output_range(off_w, g.stride_w, prm.w, g.q, lo, hi);
        if (lo == hi || p_lo == p_hi) {
          std::fill(row, row + pq, T(0));
          continue;
        }
        if (shift) {
          // Zero the margins, then one contiguous add: they land on neighbouring rows' pixels.
          zero_margins(row, p_lo, p_hi, g.q, lo, hi);
          T* dst = plane + off_h * prm.w + off_w;
          const int64_t b = p_lo * g.q + lo, e = (p_hi - 1) * g.q + hi;
          for (int64_t i = b; i < e; ++i) {
            dst[i] += row[i];
            row[i] = T(0);
          }
          std::fill(row, row + b, T(0));
          std::fill(row + e, row + pq, T(0));
          continue;
        }
        for (int64_t op = p_lo; op < p_hi; ++op) {
          T* out = plane + (op * g.stride_h + off_h) * prm.w + off_w;
          const T* in = row + op * g.q;
          if (g.stride_w == 1) {
            for (int64_t q = lo; q < hi; ++q) out[q] += in[q];
          } else {
            for (int64_t q = lo; q < hi; ++q) out[q * g.stride_w] += in[q];
          }
        }
        std::fill(row, row + pq, T(0));
      }
    }
  }
}

// Runs body(n, col_buffer, first) for every sample on the slots the workspace holds (one column buffer
// each; none for a pointwise convolution); `first` marks a slot's first sample. Slots claim samples
// from a shared counter, so a slot whose thread is busy elsewhere (or preempted) does not hold the
// others up. A sample's arithmetic does not depend on the slot that runs it.
template <typename T, typename F>
void for_each_sample(const Conv2dParams& p, std::span<T> ws, F&& body) {
  const int64_t slots = conv2d_slots(p, static_cast<int64_t>(ws.size())), col = col_elems(p);
  std::atomic<int64_t> next{0};
  tbb::parallel_for<int64_t>(0, slots, [&](int64_t s) {
    bool first = true;
    for (int64_t n; (n = next.fetch_add(1, std::memory_order_relaxed)) < p.n; first = false)
      body(n, col ? ws.data() + s * col : nullptr, first);
  });
}

// ---- Batched pointwise path (1x1 convolutions on small planes: MobileNet's later layers) ----------
// Per sample, a 1x1 convolution is W[K, C] x X_n[C, PQ]; with PQ = 49, 16 or 1 that GEMM is too thin
// for OpenBLAS (and the filter gradient's per-sample K x C updates rewrite the whole dw N times). The
// batch is packed into X[C, N*PQ] (column n*PQ + i is sample n's pixel i), one GEMM runs over it, and
// the result is unpacked. The GEMMs run on oneTBB over fixed blocks of 64 output rows, single-threaded
// OpenBLAS each: the blocks do not depend on the thread count, so neither do the bits.
constexpr int64_t kPackRows = 64;

// dst[c][n*pq + i] = src[n][c][i] (rows in parallel).
template <typename T>
void pack_batch(const T* src, int64_t n, int64_t c, int64_t pq, T* dst) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, c, 16), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t ci = r.begin(); ci < r.end(); ++ci)
      for (int64_t ni = 0; ni < n; ++ni) std::memcpy(dst + (ci * n + ni) * pq, src + (ni * c + ci) * pq, pq * sizeof(T));
  });
}

// dst[n][c][i] = src[c][n*pq + i].
template <typename T>
void unpack_batch(const T* src, int64_t n, int64_t c, int64_t pq, T* dst) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, c, 16), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t ci = r.begin(); ci < r.end(); ++ci)
      for (int64_t ni = 0; ni < n; ++ni) std::memcpy(dst + (ni * c + ci) * pq, src + (ci * n + ni) * pq, pq * sizeof(T));
  });
}

// body(row0, rows) over [0, m) in fixed blocks of kPackRows.
template <typename F>
void for_row_blocks(int64_t m, F&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, (m + kPackRows - 1) / kPackRows, 1),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t blk = r.begin(); blk < r.end(); ++blk) {
                        const int64_t r0 = blk * kPackRows;
                        body(r0, std::min(kPackRows, m - r0));
                      }
                    });
}

template <typename T>
void batched_pointwise_forward(const Conv2dParams& p, const T* x, const T* w, const T* b, T* y, T* pack) {
  const int64_t cols = p.n * p.col_cols();
  T* xp = pack;
  T* yp = pack + p.c * cols;
  pack_batch(x, p.n, p.c, p.col_cols(), xp);
  for_row_blocks(p.k, [&](int64_t k0, int64_t rows) {
    if (b)
      for (int64_t k = k0; k < k0 + rows; ++k) std::fill(yp + k * cols, yp + (k + 1) * cols, b[k]);
    gemm(false, false, rows, cols, p.c, T(1), w + k0 * p.c, p.c, xp, cols, b ? T(1) : T(0), yp + k0 * cols, cols);
  });
  unpack_batch(yp, p.n, p.k, p.col_cols(), y);
}

template <typename T>
void batched_pointwise_backward_data(const Conv2dParams& p, const T* w, const T* dy, T* dx, T* pack) {
  const int64_t cols = p.n * p.col_cols();
  T* dxp = pack;
  T* dyp = pack + p.c * cols;
  pack_batch(dy, p.n, p.k, p.col_cols(), dyp);
  for_row_blocks(p.c, [&](int64_t c0, int64_t rows) {
    gemm(true, false, rows, cols, p.k, T(1), w + c0, p.c, dyp, cols, T(0), dxp + c0 * cols, cols);
  });
  unpack_batch(dxp, p.n, p.c, p.col_cols(), dx);
}

template <typename T>
void batched_pointwise_backward_filter(const Conv2dParams& p, const T* x, const T* dy, T* dw, T* pack) {
  const int64_t cols = p.n * p.col_cols();
  T* xp = pack;
  T* dyp = pack + p.c * cols;
  pack_batch(x, p.n, p.c, p.col_cols(), xp);
  pack_batch(dy, p.n, p.k, p.col_cols(), dyp);
  for_row_blocks(p.k, [&](int64_t k0, int64_t rows) {
    gemm(false, true, rows, p.c, cols, T(1), dyp + k0 * cols, cols, xp, cols, T(0), dw + k0 * p.c, p.c);
  });
}

template <typename T>
T* pack_buffer(const Conv2dParams& p, std::span<T> ws) {
  FASTNN_CHECK(static_cast<int64_t>(ws.size()) >= pack_elems(p), "conv2d: workspace of ", ws.size(),
               " scalars, the batched pointwise path needs ", pack_elems(p));
  return ws.data() + (static_cast<int64_t>(ws.size()) - pack_elems(p));
}

}  // namespace

// ---- One image (predict --batch_size 1, a server answering one request) -----------------------
// With N = 1 there are no samples to spread over the threads, so the forward GEMM itself is split:
// output rows in blocks of kPackRows x output pixels in blocks of kSingleImageCols, each block a
// single-threaded GEMM on oneTBB. The blocks are a function of the shape only, so the bits do not
// depend on the thread count.
constexpr int64_t kSingleImageCols = 512;

template <typename T>
void single_image_forward(const Conv2dParams& p, const T* x, const T* w, const T* b, T* y, std::span<T> ws) {
  const int64_t pq = p.col_cols(), crs = p.col_rows();
  const T* cols = x;
  if (col_elems(p) > 0) {
    im2col(p, x, ws.data());
    cols = ws.data();
  }
  const int64_t row_blocks = (p.k + kPackRows - 1) / kPackRows, col_blocks = (pq + kSingleImageCols - 1) / kSingleImageCols;
  tbb::parallel_for<int64_t>(0, row_blocks * col_blocks, [&](int64_t blk) {
    const int64_t k0 = blk / col_blocks * kPackRows, rows = std::min(kPackRows, p.k - k0);
    const int64_t j0 = blk % col_blocks * kSingleImageCols, width = std::min(kSingleImageCols, pq - j0);
    if (b)
      for (int64_t k = k0; k < k0 + rows; ++k) std::fill(y + k * pq + j0, y + k * pq + j0 + width, b[k]);
    gemm(false, false, rows, width, crs, T(1), w + k0 * crs, crs, cols + j0, pq, b ? T(1) : T(0), y + k0 * pq + j0, pq);
  });
}

template <typename T>
void conv2d_forward(const Conv2dParams& p, const T* x, const T* w, const T* b, T* y, std::span<T> ws) {
  use_single_threaded_blas();
  if (conv2d_batched_pointwise(p)) return batched_pointwise_forward(p, x, w, b, y, pack_buffer(p, ws));
  if (p.n == 1 && p.groups == 1) return single_image_forward(p, x, w, b, y, ws);
  const int64_t chw = p.c * p.h * p.w, pq = p.col_cols(), kg = p.k / p.groups;
  const int64_t crs_g = p.col_rows() / p.groups;
  for_each_sample<T>(p, ws, [&](int64_t n, T* col, bool) {
    const T* xn = x + n * chw;
    T* yn = y + n * p.k * pq;
    if (col) im2col(p, xn, col);
    const T* cols = col ? col : xn;
    // The bias is written first and the GEMM adds onto it: one pass over y instead of two (a beta = 0
    // GEMM clears C before accumulating).
    if (b)
      for (int64_t k = 0; k < p.k; ++k) std::fill(yn + k * pq, yn + (k + 1) * pq, b[k]);
    for (int64_t g = 0; g < p.groups; ++g)
      gemm(false, false, kg, pq, crs_g, T(1), w + g * kg * crs_g, crs_g, cols + g * crs_g * pq, pq, b ? T(1) : T(0),
           yn + g * kg * pq, pq);
  });
}

template <typename T>
void conv2d_backward_data(const Conv2dParams& p, const T* w, const T* dy, T* dx, std::span<T> ws) {
  use_single_threaded_blas();
  if (conv2d_batched_pointwise(p)) return batched_pointwise_backward_data(p, w, dy, dx, pack_buffer(p, ws));
  const int64_t chw = p.c * p.h * p.w, pq = p.col_cols(), kg = p.k / p.groups;
  const int64_t crs_g = p.col_rows() / p.groups;
  for_each_sample<T>(p, ws, [&](int64_t n, T* col, bool first) {
    const T* dyn = dy + n * p.k * pq;
    T* dcol = col ? col : dx + n * chw;
    // After the slot's first sample, col2im has left the column buffer zero (adding onto +0 gives the
    // same bits as a cleared C).
    const T beta = col && !first ? T(1) : T(0);
    for (int64_t g = 0; g < p.groups; ++g)
      gemm(true, false, crs_g, pq, kg, T(1), w + g * kg * crs_g, crs_g, dyn + g * kg * pq, pq, beta,
           dcol + g * crs_g * pq, pq);
    if (col) col2im(p, col, dx + n * chw);
  });
}

template <typename T>
void conv2d_backward_filter(const Conv2dParams& p, const T* x, const T* dy, T* dw, T* db, std::span<T> ws) {
  use_single_threaded_blas();
  const int64_t chw = p.c * p.h * p.w, pq = p.col_cols(), kg = p.k / p.groups;
  const int64_t crs_g = p.col_rows() / p.groups, wn = p.weight_numel();
  if (dw && conv2d_batched_pointwise(p)) {
    batched_pointwise_backward_filter(p, x, dy, dw, pack_buffer(p, ws));
  } else if (dw) {
    // Lane l accumulates samples l, l + lanes, ... (lane 0 straight into dw), then the lanes are added
    // in lane order. The lanes depend on the batch size only, so the sum does not depend on the
    // thread count or on the workspace; the slots claim whole lanes.
    const int64_t lanes = conv2d_filter_lanes(p), col = col_elems(p);
    const int64_t ws_slots = conv2d_slots(p, static_cast<int64_t>(ws.size())), slots = std::min(lanes, ws_slots);
    T* partials = ws.data() + ws_slots * col;
    std::atomic<int64_t> next{0};
    tbb::parallel_for<int64_t>(0, slots, [&](int64_t s) {
      T* colbuf = col ? ws.data() + s * col : nullptr;
      for (int64_t lane; (lane = next.fetch_add(1, std::memory_order_relaxed)) < lanes;) {
        T* acc = lane == 0 ? dw : partials + (lane - 1) * wn;
        for (int64_t n = lane; n < p.n; n += lanes) {
          const T* xn = x + n * chw;
          if (colbuf) im2col(p, xn, colbuf);
          const T* cols = colbuf ? colbuf : xn;
          const T beta = n == lane ? T(0) : T(1);
          for (int64_t g = 0; g < p.groups; ++g)
            gemm(false, true, kg, crs_g, pq, T(1), dy + n * p.k * pq + g * kg * pq, pq, cols + g * crs_g * pq, pq,
                 beta, acc + g * kg * crs_g, crs_g);
        }
      }
    });
    if (lanes > 1) {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, wn, 4096), [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t i = r.begin(); i < r.end(); ++i)
          for (int64_t l = 1; l < lanes; ++l) dw[i] += partials[(l - 1) * wn + i];
      });
    }
  }
  if (db) {
    // Eight interleaved double accumulators, added up in a fixed order: one running sum would be bound
    // by the add latency (a third of LeNet conv1's filter pass).
    tbb::parallel_for<int64_t>(0, p.k, [&](int64_t k) {
      double acc[8] = {};
      for (int64_t n = 0; n < p.n; ++n) {
        const T* d = dy + (n * p.k + k) * pq;
        int64_t i = 0;
        for (; i + 8 <= pq; i += 8)
          for (int j = 0; j < 8; ++j) acc[j] += d[i + j];
        for (; i < pq; ++i) acc[i % 8] += d[i];
      }
      db[k] = static_cast<T>(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
    });
  }
}

#define FASTNN_CONV2D_INSTANTIATE(T)                                                                      \
  template void conv2d_forward<T>(const Conv2dParams&, const T*, const T*, const T*, T*, std::span<T>);   \
  template void conv2d_backward_data<T>(const Conv2dParams&, const T*, const T*, T*, std::span<T>);       \
  template void conv2d_backward_filter<T>(const Conv2dParams&, const T*, const T*, T*, T*, std::span<T>);
FASTNN_CONV2D_INSTANTIATE(float)
FASTNN_CONV2D_INSTANTIATE(double)
#undef FASTNN_CONV2D_INSTANTIATE

}  // namespace cpu

namespace {

template <typename T>
class Conv2dCpu final : public OpKernel {
 public:
  Conv2dCpu(const Conv2dParams& p, DType dt) : OpKernel("conv2d", Device::kCpu), p_(p) {
    sig_ = conv2d_signature(p, dt);
    sig_.workspace_bytes = static_cast<size_t>(cpu::conv2d_workspace_elems(p, cpu::parallel_slots(p.n))) * sizeof(T);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const PartMark part("conv2d fprop");
    cpu::conv2d_forward<T>(p_, a.inputs[0].data<T>(), a.params[0].data<T>(),
                           p_.bias ? a.params[1].data<T>() : nullptr, a.outputs[0].data<T>(), ws(a.workspace));
  }
  void run_backward(const BackwardArgs& a) override {
    const T* dy = a.d_outputs[0].data<T>();
    if (a.d_inputs[0].defined()) {
      const PartMark part("conv2d dgrad");
      cpu::conv2d_backward_data<T>(p_, a.params[0].data<T>(), dy, a.d_inputs[0].data<T>(), ws(a.workspace));
    }
    T* dw = a.d_params[0].defined() ? a.d_params[0].data<T>() : nullptr;
    T* db = p_.bias && a.d_params[1].defined() ? a.d_params[1].data<T>() : nullptr;
    if (dw || db) {
      const PartMark part("conv2d wgrad");  // with the bias gradient, computed in the same pass here
      cpu::conv2d_backward_filter<T>(p_, a.inputs[0].data<T>(), dy, dw, db, ws(a.workspace));
    }
  }

 private:
  std::span<T> ws(const Tensor& t) const { return cpu::workspace_span<T>(t, sig_.workspace_bytes); }
  Conv2dParams p_;
};

std::vector<OpCase> conv2d_cases() {
  return {
      {"k3_valid", {{"filters", 4}, {"kernel", 3}}, {{{2, 3, 5, 5}}}},
      {"k3_s2_same", {{"filters", 3}, {"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{2, 2, 7, 6}}}},
      {"k1x7_same", {{"filters", 2}, {"kernel", Ints{1, 7}}, {"padding", "same"}}, {{{1, 3, 4, 8}}}},
      {"k7x1_same_nobias", {{"filters", 2}, {"kernel", Ints{7, 1}}, {"padding", "same"}, {"bias", false}},
       {{{1, 2, 8, 3}}}},
      {"g2_d2_asym", {{"filters", 4}, {"kernel", 3}, {"groups", 2}, {"dilation", 2}, {"padding", Ints{1, 2, 0, 1}}},
       {{{2, 4, 7, 6}}}},
      {"depthwise_s2", {{"filters", 3}, {"kernel", Ints{3, 2}}, {"groups", 3}, {"stride", Ints{2, 1}},
                        {"padding", Ints{1, 0}}},
       {{{3, 3, 6, 5}}}},
      {"pointwise", {{"filters", 5}, {"kernel", 1}}, {{{3, 4, 3, 3}}}},
      {"k1_s2", {{"filters", 2}, {"kernel", 1}, {"stride", 2}, {"bias", false}}, {{{2, 3, 5, 5}}}},
  };
}

}  // namespace

void register_conv2d(OpRegistry& r) {
  r.add(OpDef{
      .name = "conv2d",
      .summary = "2-D convolution, NCHW, groups/dilation/stride/padding (same, valid, asymmetric)",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const Conv2dParams p = conv2d_params(a, in);
                     return make_cpu_kernel<Conv2dCpu>("conv2d", compute_dtype("conv2d", in), p,
                                                       compute_dtype("conv2d", in));
                   }}},
      .test_cases = conv2d_cases,
  });
#ifdef FASTNN_HAVE_DNNL
  register_conv2d_dnnl(r);
#endif
#ifdef FASTNN_HAVE_CUDA
  register_conv2d_cuda(r);
#endif
}

}  // namespace fastnn::ops
