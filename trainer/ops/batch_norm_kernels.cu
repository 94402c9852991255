// Batch norm on CUDA: the statistics and gradient sums over runs of each channel (channel_sums.cuh), the
// NHWC packed rows kernels (bn_rows_packed.cuh), normalise with the fused activation or residual, and
// dx. The old kernels had one block per channel and read x twice; here a layer with 64 channels still
// fills the GPU, and per-element index math is FastDivide's multiply-high, not a 64-bit divide.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "core/fast_divide.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/batch_norm.h"
#include "trainer/ops/batch_norm_stats.h"
#include "trainer/ops/bn_rows_packed.cuh"
#include "trainer/ops/channel_index.h"
#include "trainer/ops/channel_sums.cuh"
#include "trainer/ops/cuda_helpers.h"

namespace fastnn::ops::gpu {

using namespace cuda;  // device_util.cuh
using namespace sums;            // channel_sums.cuh

namespace {

// The shift of the statistics' sums: the running mean, or 0 once it is not finite (a step that overflowed
// made it inf/NaN; the batch's own statistics must not inherit that, as on the CPU, which takes the
// batch's mean directly). bn_partial_stats_kernel and bn_finish_stats_kernel must agree on it.
__device__ inline double stats_pivot(float running_mean) {
  const double k = running_mean;
  return isfinite(k) ? k : 0.0;
}

// Per run: sum(d) and sum(d^2) with d = x - pivot (the running mean: shifted sums keep the variance's
// cancellation small once the running mean tracks the batch mean).
template <typename T>
__global__ void bn_partial_stats_kernel(BatchNormParams p, BnSplit sp, FastDivide hw_div, const T* x,
                                        const float* pivot, double* partials) {
  const int64_t c = blockIdx.x, run = blockIdx.y;
  const double k = stats_pivot(pivot[c]);
  double sum = 0, ss = 0;
  for_channel_run(p, sp, hw_div, c, run, [&](int64_t o) {
    const double d = static_cast<double>(to_f(x[o])) - k;
    sum += d;
    ss += d * d;
  });
  sum = block_sum(sum);
  ss = block_sum(ss);
  if (threadIdx.x == 0) {
    partials[2 * (c * sp.runs + run)] = sum;
    partials[2 * (c * sp.runs + run) + 1] = ss;
  }
}

// Per channel (a warp each): the runs' sums (warp_sum_runs), then the CPU's formulas (bn_stats::store).
__global__ void bn_finish_stats_kernel(BatchNormParams p, int64_t runs, const double* partials, float* running_mean,
                                       float* running_var, float* save_mean, float* save_invstd) {
  FASTNN_WARP_LOOP(c, p.c) {
    const double sum = warp_sum_runs(runs, [&](int64_t r) { return partials[2 * (c * runs + r)]; });
    const double ss = warp_sum_runs(runs, [&](int64_t r) { return partials[2 * (c * runs + r) + 1]; });
    if ((threadIdx.x & 31) != 0) continue;
    const double k = stats_pivot(running_mean[c]), m = static_cast<double>(p.n * p.hw);
    const double shift = sum / m;
    bn_stats::store(p, c, k + shift, ss / m - shift * shift, running_mean, running_var, save_mean, save_invstd);
  }
}

// Per channel: the statistics from f32 sums [Σx (C), Σx² (C)] that the convolution before wrote
// (batch_norm_forward_from_sums), unshifted, so the variance is E[x²] − mean² in double.
__global__ void bn_finish_sums_kernel(BatchNormParams p, const float* sums, float* running_mean, float* running_var,
                                      float* save_mean, float* save_invstd) {
  FASTNN_GRID_LOOP(c, p.c) {
    double mean, var;
    bn_stats::from_sums(static_cast<double>(p.n * p.hw), sums[c], sums[p.c + c], &mean, &var);
    bn_stats::store(p, c, mean, var, running_mean, running_var, save_mean, save_invstd);
  }
}

__global__ void bn_eval_stats_kernel(int64_t c, double eps, const float* running_mean, const float* running_var,
                                     float* save_mean, float* save_invstd) {
  FASTNN_GRID_LOOP(i, c) {
    save_mean[i] = running_mean[i];
    save_invstd[i] = static_cast<float>(1.0 / sqrt(static_cast<double>(running_var[i]) + eps));
  }
}

// What the normalise kernels write for one element, v = x * scale + shift: v rounded to T, then the
// activation (packed::bn_activate: bitwise relu's or relu6's kernel after batch norm's); Add (with relu):
// the rounded value plus the residual r, rounded, then max(., +0) — bitwise add+relu's kernel after
// batch norm's (its sum is in float, as here).
template <typename T, BnActivation Act, bool Add>
__device__ __forceinline__ T bn_output(float v, T r) {
  T z = from_f<T>(v);
  if constexpr (Add) z = from_f<T>(to_f(z) + to_f(r));
  return packed::bn_activate<Act>(z);
}

// bn_output and stats_pivot as the packed kernels (bn_rows_packed.cuh) take them.
template <typename T, BnActivation Act, bool Add>
struct BnEpilogue {
  __device__ T operator()(float v, T r) const { return bn_output<T, Act, Add>(v, r); }
};
struct StatsPivot {
  __device__ double operator()(float running_mean) const { return stats_pivot(running_mean); }
};

// y = x * scale + shift with scale = gamma * invstd, shift = beta - mean * scale (packed::bn_apply), then
// bn_output's epilogue (r is read only with Add).
template <typename T, BnActivation Act, bool Add>
__global__ void bn_normalize_kernel(int64_t total, ChannelIndex ix, const T* x, const float* gamma, const float* beta,
                                    const float* mean, const float* invstd, const T* r, T* y) {
  FASTNN_GRID_LOOP(i, total) {
    const int64_t ch = channel_of(i, ix);
    const float scale = packed::bn_scale(gamma[ch], invstd[ch]);
    const float shift = packed::bn_shift(beta[ch], mean[ch], scale);
    y[i] = bn_output<T, Act, Add>(packed::bn_apply(to_f(x[i]), scale, shift), Add ? r[i] : T{});
  }
}

// The gradient reaching batch norm: dy, or under a fused activation dy where its gradient passes.
template <typename T, BnActivation Act>
__device__ __forceinline__ float bn_grad_at(const T* dy, const T* relu_y, int64_t o) {
  if constexpr (Act != BnActivation::kNone) return packed::bn_act_passes<Act>(to_f(relu_y[o])) ? to_f(dy[o]) : 0.f;
  return to_f(dy[o]);
}

// Per run: sum(dy) and sum(dy * xhat).
template <typename T, BnActivation Act>
__global__ void bn_partial_grad_kernel(BatchNormParams p, BnSplit sp, FastDivide hw_div, const T* x, const float* mean_s,
                                       const float* invstd_s, const T* dy, const T* relu_y, double* partials) {
  const int64_t c = blockIdx.x, run = blockIdx.y;
  const double mean = mean_s[c], invstd = invstd_s[c];
  double sdy = 0, sdyx = 0;
  for_channel_run(p, sp, hw_div, c, run, [&](int64_t o) {
    const double g = bn_grad_at<T, Act>(dy, relu_y, o);
    sdy += g;
    sdyx += g * (static_cast<double>(to_f(x[o])) - mean) * invstd;
  });
  sdy = block_sum(sdy);
  sdyx = block_sum(sdyx);
  if (threadIdx.x == 0) {
    partials[2 * (c * sp.runs + run)] = sdy;
    partials[2 * (c * sp.runs + run) + 1] = sdyx;
  }
}


template <typename T>
__global__ void bn_rows_stats_kernel(BatchNormParams p, BnSplit sp, const T* x, const float* pivot, double* partials) {
  const int64_t ch = rows_channel();
  const double k = ch < p.c ? stats_pivot(pivot[ch]) : 0.0;
  double sum = 0, ss = 0;
  for_rows_run(p, sp, ch, [&](int64_t o) {
    const double d = static_cast<double>(to_f(x[o])) - k;
    sum += d;
    ss += d * d;
  });
  store_rows_partials(p, sp, ch, 2, sum, ss, partials);
}

template <typename T, BnActivation Act>
__global__ void bn_rows_grad_kernel(BatchNormParams p, BnSplit sp, const T* x, const float* mean_s,
                                    const float* invstd_s, const T* dy, const T* relu_y, double* partials) {
  const int64_t ch = rows_channel();
  const double mean = ch < p.c ? mean_s[ch] : 0.0, invstd = ch < p.c ? invstd_s[ch] : 0.0;
  double sdy = 0, sdyx = 0;
  for_rows_run(p, sp, ch, [&](int64_t o) {
    const double g = bn_grad_at<T, Act>(dy, relu_y, o);
    sdy += g;
    sdyx += g * (static_cast<double>(to_f(x[o])) - mean) * invstd;
  });
  store_rows_partials(p, sp, ch, 2, sdy, sdyx, partials);
}


// Per channel (a warp each): dgamma / dbeta and the dx coefficients from the runs' sums (warp_sum_runs).
__global__ void bn_finish_grad_kernel(BatchNormParams p, int64_t runs, bool training, const double* partials,
                                      float* dgamma, float* dbeta, double* coef) {
  FASTNN_WARP_LOOP(c, p.c) {
    const double sdy = warp_sum_runs(runs, [&](int64_t r) { return partials[2 * (c * runs + r)]; });
    const double sdyx = warp_sum_runs(runs, [&](int64_t r) { return partials[2 * (c * runs + r) + 1]; });
    if ((threadIdx.x & 31) != 0) continue;
    const double m = static_cast<double>(p.n * p.hw);
    if (dgamma) dgamma[c] = static_cast<float>(sdyx);
    if (dbeta) dbeta[c] = static_cast<float>(sdy);
    coef[2 * c] = training ? sdy / m : 0.0;
    coef[2 * c + 1] = training ? sdyx / m : 0.0;
  }
}

// dx = gamma * invstd * (dy - a - xhat * b).
template <typename T, BnActivation Act>
__global__ void bn_bwd_dx_kernel(int64_t total, ChannelIndex ix, const T* x, const float* gamma, const float* mean_s,
                                 const float* invstd_s, const T* dy, const T* relu_y, const double* coef, T* dx) {
  FASTNN_GRID_LOOP(i, total) {
    const int64_t ch = channel_of(i, ix);
    const float invstd = invstd_s[ch];
    const float a = static_cast<float>(coef[2 * ch]), b = static_cast<float>(coef[2 * ch + 1]);
    const float xhat = (to_f(x[i]) - mean_s[ch]) * invstd;
    dx[i] = from_f<T>(gamma[ch] * invstd * (bn_grad_at<T, Act>(dy, relu_y, i) - a - xhat * b));
  }
}

// Rows whose channel count is a multiple of V = 16 / sizeof(T) and whose tensors are 16-byte aligned
// take the packed kernels (bn_rows_packed.cuh).
template <typename T>
bool packable_rows(const BatchNormParams& p, std::initializer_list<const void*> ptrs) {
  constexpr int64_t kV = 16 / sizeof(T);
  return p.hw == 1 && p.c % kV == 0 && aligned16(ptrs);
}


// r: the residual added before the relu (batch_norm+add+relu), or null.
template <typename T, BnActivation Act, bool Add>
void bn_normalize_with(const BatchNormParams& p, const T* x, const float* gamma, const float* beta, const float* mean,
                       const float* invstd, const T* r, T* y, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.hw;
  constexpr int kV = 16 / sizeof(T);
  if (packable_rows<T>(p, {x, y, r})) {
    const packed::PackedGrid g = packed::packed_grid(p.c, kV);
    packed::normalize_kernel<T, Add, kV><<<dim3(g.tiles, packed::packed_row_blocks(p.n, g)), g.block, 0, s>>>(
        p.n, p.c, x, gamma, beta, mean, invstd, r, y, BnEpilogue<T, Act, Add>{});
  } else {
    bn_normalize_kernel<T, Act, Add><<<grid_for(total), kThreads, 0, s>>>(total, channel_index(p.n, p.c, p.hw), x,
                                                                           gamma, beta, mean, invstd, r, y);
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T, BnActivation Act>
void bn_normalize(const BatchNormParams& p, const T* x, const float* gamma, const float* beta, const float* mean,
                  const float* invstd, const T* r, T* y, cudaStream_t s) {
  if (r) {  // only batch_norm+add+relu passes a residual, always with its relu
    bn_normalize_with<T, BnActivation::kRelu, true>(p, x, gamma, beta, mean, invstd, r, y, s);
  } else {
    bn_normalize_with<T, Act, false>(p, x, gamma, beta, mean, invstd, nullptr, y, s);
  }
}

// residual: added before the relu (batch_norm+add+relu; needs Act == kRelu), or null.
template <typename T, BnActivation Act>
void bn_forward_training(const BatchNormParams& p, const T* x, const float* gamma, const float* beta, float* running_mean,
                         float* running_var, T* y, float* save_mean, float* save_invstd, void* ws, cudaStream_t s,
                         const T* residual = nullptr) {
  FASTNN_CHECK(p.c <= 0x7fffffff, "batch_norm: ", p.c, " channels");
  if (p.c == 0) return;
  constexpr int kV = 16 / sizeof(T);
  const bool packed_pass = packable_rows<T>(p, {x});
  const BnSplit sp = packed_pass ? packed_rows_split(p.n, p.c, kV) : bn_split(p);
  double* partials = static_cast<double*>(ws);
  if (p.n * p.hw > 0) {
    if (packed_pass) {
      const packed::PackedGrid g = packed::packed_grid(p.c, kV);
      packed::stats_kernel<T, kV><<<dim3(g.tiles, static_cast<unsigned>(sp.runs)), g.block, 0, s>>>(
          p.n, p.c, sp, x, running_mean, StatsPivot{}, partials);
    } else if (by_rows(p)) {
      bn_rows_stats_kernel<T><<<rows_grid(p, sp), rows_block(), 0, s>>>(p, sp, x, running_mean, partials);
    } else {
      bn_partial_stats_kernel<T><<<dim3(static_cast<unsigned>(p.c), static_cast<unsigned>(sp.runs)), kReduceThreads,
                                   0, s>>>(p, sp, hw_divider(p), x, running_mean, partials);
    }
    CUDA_CHECK_LAUNCH();
  }
  bn_finish_stats_kernel<<<grid_for(p.c * 32), kThreads, 0, s>>>(p, p.n * p.hw > 0 ? sp.runs : 0, partials,
                                                                running_mean, running_var, save_mean, save_invstd);
  CUDA_CHECK_LAUNCH();
  const int64_t total = p.n * p.c * p.hw;
  if (total == 0) return;
  bn_normalize<T, Act>(p, x, gamma, beta, save_mean, save_invstd, residual, y, s);
}

template <typename T, BnActivation Act>
void bn_forward_inference(const BatchNormParams& p, const T* x, const float* gamma, const float* beta,
                          const float* running_mean, const float* running_var, T* y, float* save_mean,
                          float* save_invstd, cudaStream_t s, const T* residual = nullptr) {
  if (p.c == 0) return;
  bn_eval_stats_kernel<<<grid_for(p.c), kThreads, 0, s>>>(p.c, p.epsilon, running_mean, running_var, save_mean,
                                                             save_invstd);
  CUDA_CHECK_LAUNCH();
  const int64_t total = p.n * p.c * p.hw;
  if (total == 0) return;
  bn_normalize<T, Act>(p, x, gamma, beta, save_mean, save_invstd, residual, y, s);
}

// mask_beta (with Act): the packed kernels recompute the activation's mask from x (packed::ActMask)
// instead of reading relu_y, which the generic kernels still read.
template <typename T, BnActivation Act>
void bn_backward(const BatchNormParams& p, bool training, const T* x, const float* gamma, const float* save_mean,
                 const float* save_invstd, const T* relu_y, const T* dy, T* dx, float* dgamma, float* dbeta, void* ws,
                 cudaStream_t s, const float* mask_beta = nullptr) {
  FASTNN_CHECK(p.c <= 0x7fffffff, "batch_norm: ", p.c, " channels");
  if (p.c == 0) return;
  constexpr int kV = 16 / sizeof(T);
  const bool packed_pass = packable_rows<T>(p, {x, dy, relu_y});
  const BnSplit sp = packed_pass ? packed_rows_split(p.n, p.c, kV) : bn_split(p);
  double* partials = static_cast<double*>(ws);
  double* coef = partials + 2 * p.c * sp.runs;
  const bool any = p.n * p.hw > 0;
  if (any) {
    if (packed_pass) {
      const packed::PackedGrid g = packed::packed_grid(p.c, kV);
      packed::grad_kernel<T, Act, kV><<<dim3(g.tiles, static_cast<unsigned>(sp.runs)), g.block, 0, s>>>(
          p.n, p.c, sp, x, gamma, mask_beta, save_mean, save_invstd, dy, relu_y, partials);
    } else if (by_rows(p)) {
      bn_rows_grad_kernel<T, Act><<<rows_grid(p, sp), rows_block(), 0, s>>>(p, sp, x, save_mean, save_invstd, dy,
                                                                           relu_y, partials);
    } else {
      bn_partial_grad_kernel<T, Act><<<dim3(static_cast<unsigned>(p.c), static_cast<unsigned>(sp.runs)),
                                        kReduceThreads, 0, s>>>(p, sp, hw_divider(p), x, save_mean, save_invstd, dy,
                                                                relu_y, partials);
    }
    CUDA_CHECK_LAUNCH();
  }
  bn_finish_grad_kernel<<<grid_for(p.c * 32), kThreads, 0, s>>>(p, any ? sp.runs : 0, training, partials, dgamma, dbeta,
                                                               coef);
  CUDA_CHECK_LAUNCH();
  const int64_t total = p.n * p.c * p.hw;
  if (!dx || total == 0) return;
  if (packable_rows<T>(p, {x, dy, relu_y, dx})) {
    const packed::PackedGrid g = packed::packed_grid(p.c, kV);
    packed::dx_kernel<T, Act, kV><<<dim3(g.tiles, packed::packed_row_blocks(p.n, g)), g.block, 0, s>>>(
        p.n, p.c, x, gamma, mask_beta, save_mean, save_invstd, dy, relu_y, coef, dx);
  } else {
    bn_bwd_dx_kernel<T, Act><<<grid_for(total), kThreads, 0, s>>>(total, channel_index(p.n, p.c, p.hw), x, gamma,
                                                                   save_mean, save_invstd, dy, relu_y, coef, dx);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void batch_norm_forward_training(const BatchNormParams& p, const T* x, const float* gamma, const float* beta,
                                 float* running_mean, float* running_var, T* y, float* save_mean, float* save_invstd,
                                 void* ws, cudaStream_t s) {
  bn_forward_training<T, BnActivation::kNone>(p, x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, ws, s);
}

template <typename T>
void batch_norm_forward_inference(const BatchNormParams& p, const T* x, const float* gamma, const float* beta,
                                  const float* running_mean, const float* running_var, T* y, float* save_mean,
                                  float* save_invstd, cudaStream_t s) {
  bn_forward_inference<T, BnActivation::kNone>(p, x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, s);
}

// The runs' partial sums (2 doubles per run and channel) and, after them, the backward's 2 coefficients
// per channel.
size_t batch_norm_workspace_bytes(const BatchNormParams& p) {
  int64_t runs = bn_split(p).runs;
  for (int v : {8, 4})  // the packed kernels' split where they may run (16-byte packs of 2- or 4-byte values)
    if (by_rows(p) && p.c % v == 0) runs = std::max(runs, packed_rows_split(p.n, p.c, v).runs);
  return static_cast<size_t>(p.c) * static_cast<size_t>(2 * runs + 2) * sizeof(double);
}

template <typename T>
void batch_norm_backward(const BatchNormParams& p, bool training, const T* x, const float* gamma,
                         const float* save_mean, const float* save_invstd, const T* dy, T* dx, float* dgamma,
                         float* dbeta, void* ws, cudaStream_t s) {
  bn_backward<T, BnActivation::kNone>(p, training, x, gamma, save_mean, save_invstd, nullptr, dy, dx, dgamma, dbeta, ws, s);
}

template <typename T, BnActivation Act>
void bn_act_forward(const BatchNormParams& p, bool training, const T* x, const float* gamma, const float* beta,
                    float* running_mean, float* running_var, T* y, float* save_mean, float* save_invstd, void* ws,
                    cudaStream_t s) {
  if (training)
    bn_forward_training<T, Act>(p, x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, ws, s);
  else
    bn_forward_inference<T, Act>(p, x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, s);
}

template <typename T>
void batch_norm_relu_forward(const BatchNormParams& p, bool training, const T* x, const float* gamma,
                             const float* beta, float* running_mean, float* running_var, T* y, float* save_mean,
                             float* save_invstd, void* ws, cudaStream_t s, BnActivation act) {
  FASTNN_CHECK(act != BnActivation::kNone, "batch_norm_relu_forward: no activation");
  if (act == BnActivation::kRelu6)
    bn_act_forward<T, BnActivation::kRelu6>(p, training, x, gamma, beta, running_mean, running_var, y, save_mean,
                                            save_invstd, ws, s);
  else
    bn_act_forward<T, BnActivation::kRelu>(p, training, x, gamma, beta, running_mean, running_var, y, save_mean,
                                           save_invstd, ws, s);
}

template <typename T>
void batch_norm_add_relu_forward(const BatchNormParams& p, bool training, const T* x, const T* r, const float* gamma,
                                 const float* beta, float* running_mean, float* running_var, T* y, float* save_mean,
                                 float* save_invstd, void* ws, cudaStream_t s) {
  FASTNN_CHECK(r, "batch_norm+add+relu: no residual");
  if (training)
    bn_forward_training<T, BnActivation::kRelu>(p, x, gamma, beta, running_mean, running_var, y, save_mean,
                                                save_invstd, ws, s, r);
  else
    bn_forward_inference<T, BnActivation::kRelu>(p, x, gamma, beta, running_mean, running_var, y, save_mean,
                                                 save_invstd, s, r);
}

template <typename T>
void batch_norm_relu_backward(const BatchNormParams& p, bool training, const T* x, const float* gamma,
                              const float* save_mean, const float* save_invstd, const T* y, const T* dy, T* dx,
                              float* dgamma, float* dbeta, void* ws, cudaStream_t s, BnActivation act,
                              const float* beta) {
  FASTNN_CHECK(act != BnActivation::kNone, "batch_norm_relu_backward: no activation");
  if (act == BnActivation::kRelu6)
    bn_backward<T, BnActivation::kRelu6>(p, training, x, gamma, save_mean, save_invstd, y, dy, dx, dgamma, dbeta, ws,
                                         s, beta);
  else
    bn_backward<T, BnActivation::kRelu>(p, training, x, gamma, save_mean, save_invstd, y, dy, dx, dgamma, dbeta, ws,
                                        s, beta);
}

template <typename T>
void batch_norm_forward_from_sums(const BatchNormParams& p, const float* sums, const T* x, const T* r,
                                  const float* gamma, const float* beta, float* running_mean, float* running_var, T* y,
                                  float* save_mean, float* save_invstd, cudaStream_t s, BnActivation act) {
  FASTNN_CHECK(p.c <= 0x7fffffff, "batch_norm: ", p.c, " channels");
  FASTNN_CHECK(!r || act == BnActivation::kRelu, "batch_norm_forward_from_sums: a residual needs relu");
  if (p.c == 0) return;
  bn_finish_sums_kernel<<<grid_for(p.c), kThreads, 0, s>>>(p, sums, running_mean, running_var, save_mean, save_invstd);
  CUDA_CHECK_LAUNCH();
  if (p.n * p.c * p.hw == 0) return;
  if (act == BnActivation::kRelu6)
    bn_normalize<T, BnActivation::kRelu6>(p, x, gamma, beta, save_mean, save_invstd, nullptr, y, s);
  else if (act == BnActivation::kRelu)
    bn_normalize<T, BnActivation::kRelu>(p, x, gamma, beta, save_mean, save_invstd, r, y, s);
  else
    bn_normalize<T, BnActivation::kNone>(p, x, gamma, beta, save_mean, save_invstd, nullptr, y, s);
}

#define FASTNN_INSTANTIATE(T) \
  template void batch_norm_forward_training<T>(const BatchNormParams&, const T*, const float*, const float*, float*, \
                                               float*, T*, float*, float*, void*, cudaStream_t);              \
  template void batch_norm_forward_inference<T>(const BatchNormParams&, const T*, const float*, const float*,   \
                                                const float*, const float*, T*, float*, float*, cudaStream_t); \
  template void batch_norm_backward<T>(const BatchNormParams&, bool, const T*, const float*, const float*,     \
                                       const float*, const T*, T*, float*, float*, void*, cudaStream_t);      \
  template void batch_norm_relu_forward<T>(const BatchNormParams&, bool, const T*, const float*, const float*, \
                                           float*, float*, T*, float*, float*, void*, cudaStream_t,           \
                                           BnActivation);                                                     \
  template void batch_norm_add_relu_forward<T>(const BatchNormParams&, bool, const T*, const T*, const float*, \
                                               const float*, float*, float*, T*, float*, float*, void*,       \
                                               cudaStream_t);                                                 \
  template void batch_norm_relu_backward<T>(const BatchNormParams&, bool, const T*, const float*, const float*, \
                                            const float*, const T*, const T*, T*, float*, float*, void*,      \
                                            cudaStream_t, BnActivation, const float*);                        \
  template void batch_norm_forward_from_sums<T>(const BatchNormParams&, const float*, const T*, const T*,          \
                                                const float*, const float*, float*, float*, T*, float*, float*,   \
                                                cudaStream_t, BnActivation);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace fastnn::ops::gpu
