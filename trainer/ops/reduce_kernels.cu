// Reduction kernels: bias gradient, global average pool, softmax cross-entropy, top-k (batch norm's are
// in batch_norm_kernels.cu; the per-channel sums over runs both use are in channel_sums.cuh). Sums run in
// double (like the CPU oracle) in a fixed order for a given shape, so results are bitwise repeatable run
// to run (no floating-point atomics).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "core/fast_divide.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/batch_norm.h"
#include "trainer/ops/channel_index.h"
#include "trainer/ops/channel_sums.cuh"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/global_avg_pool.h"
#include "trainer/ops/softmax_xent.h"
#include "trainer/ops/top_k.h"

namespace fastnn::ops::gpu {

using namespace cuda;  // device_util.cuh
using namespace sums;            // channel_sums.cuh

namespace {

// Value j of channel c in an [N, C, inner] tensor, j in [0, N*inner).
template <typename T>
__device__ __forceinline__ float channel_at(const T* x, int64_t c, int64_t k, int64_t inner, int64_t j) {
  const int64_t n = j / inner, i = j - n * inner;
  return to_f(x[(n * k + c) * inner + i]);
}

// One block per channel (no workspace: the depthwise convolution's rare bias).
template <typename T>
__global__ void bias_grad_kernel(int64_t n, int64_t k, int64_t inner, const T* dy, T* db) {
  const int64_t c = blockIdx.x, m = n * inner;
  double acc = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) acc += channel_at(dy, c, k, inner, j);
  acc = block_sum(acc);
  if (threadIdx.x == 0) db[c] = from_f<T>(static_cast<float>(acc));
}

// One warp per plane.
template <typename T>
__global__ void gap_fwd_kernel(int64_t planes, int64_t hw, const T* x, T* y) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int64_t pl = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; pl < planes; pl += warps) {
    double acc = 0;
    for (int64_t j = lane; j < hw; j += 32) acc += to_f(x[pl * hw + j]);
    acc = warp_sum(acc);
    if (lane == 0) y[pl] = from_f<T>(static_cast<float>(acc / static_cast<double>(hw)));
  }
}

template <typename T>
__global__ void gap_bwd_kernel(int64_t total, int64_t hw, const T* dy, T* dx) {
  FASTNN_GRID_LOOP(i, total) dx[i] = from_f<T>(static_cast<float>(to_f(dy[i / hw]) / static_cast<double>(hw)));
}

// NHWC: x [N, hw, C] -> y [N, C], one thread per (n, c) summing its hw values in order (neighbouring
// threads read neighbouring channels).
template <typename T>
__global__ void gap_nhwc_fwd_kernel(int64_t n, int64_t hw, int64_t c, const T* x, T* y) {
  FASTNN_GRID_LOOP(i, n * c) {
    const int64_t b = i / c, ch = i - b * c;
    double acc = 0;
    for (int64_t j = 0; j < hw; ++j) acc += to_f(x[(b * hw + j) * c + ch]);
    y[i] = from_f<T>(static_cast<float>(acc / static_cast<double>(hw)));
  }
}

template <typename T>
__global__ void gap_nhwc_bwd_kernel(int64_t total, int64_t hw, int64_t c, const T* dy, T* dx) {
  FASTNN_GRID_LOOP(i, total) {
    const int64_t ch = i % c, b = i / (hw * c);
    dx[i] = from_f<T>(static_cast<float>(to_f(dy[b * c + ch]) / static_cast<double>(hw)));
  }
}


template <typename T>
__global__ void bias_rows_kernel(BatchNormParams p, BnSplit sp, const T* dy, double* partials) {
  const int64_t ch = rows_channel();
  double sum = 0;
  for_rows_run(p, sp, ch, [&](int64_t o) { sum += to_f(dy[o]); });
  store_rows_partials(p, sp, ch, 1, sum, 0.0, partials);
}

// Bias gradient over runs of each channel, as batch norm's sums: sum(dy) per (channel, run), then the
// runs per channel by a warp. Fills the GPU for a 64-channel layer (VGG's first convolutions: one block
// per channel read the whole gradient with 64 blocks).
template <typename T>
__global__ void bias_partial_kernel(BatchNormParams p, BnSplit sp, FastDivide hw_div, const T* dy, double* partials) {
  const int64_t c = blockIdx.x, run = blockIdx.y;
  double sum = 0;
  for_channel_run(p, sp, hw_div, c, run, [&](int64_t o) { sum += to_f(dy[o]); });
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[c * sp.runs + run] = sum;
}

template <typename T>
__global__ void bias_finish_kernel(int64_t k, int64_t runs, const double* partials, T* db) {
  FASTNN_WARP_LOOP(c, k) {  // a warp per channel
    const double sum = warp_sum_runs(runs, [&](int64_t r) { return partials[c * runs + r]; });
    if ((threadIdx.x & 31) == 0) db[c] = from_f<T>(static_cast<float>(sum));
  }
}

template <typename L>
__device__ __forceinline__ bool bad(L label, int64_t k) {
  return label < 0 || label >= k;
}

// One warp per row: probabilities and the row's loss (ops/softmax_xent.h for the formula).
template <typename T, typename L>
__global__ void xent_fwd_kernel(SoftmaxXentParams p, const T* logits, const L* labels, T* probs, double* row_loss,
                                int* bad_label) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  const double eps = p.label_smoothing, off = eps / static_cast<double>(p.k);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < p.n; r += warps) {
    const T* z = logits + r * p.k;
    float mx = -INFINITY;
    for (int64_t j = lane; j < p.k; j += 32) mx = fmaxf(mx, to_f(z[j]));
    mx = warp_max(mx);
    double sum = 0, sum_z = 0;
    for (int64_t j = lane; j < p.k; j += 32) {
      const float d = to_f(z[j]) - mx;
      sum += expf(d);
      sum_z += d;
    }
    sum = warp_sum(sum);
    sum_z = warp_sum(sum_z);
    const double lse = log(sum);
    for (int64_t j = lane; j < p.k; j += 32)
      probs[r * p.k + j] = from_f<T>(static_cast<float>(exp(static_cast<double>(to_f(z[j]) - mx) - lse)));
    if (lane == 0) {
      const L label = labels[r];
      if (bad(label, p.k)) {
        atomicCAS(bad_label, 0, static_cast<int>(r + 1 > 0x7fffffff ? 0x7fffffff : r + 1));
        row_loss[r] = NAN;
      } else {
        const double logp_label = static_cast<double>(to_f(z[label]) - mx) - lse;
        const double mean_logp = sum_z / static_cast<double>(p.k) - lse;
        row_loss[r] = -(1 - eps) * logp_label - off * static_cast<double>(p.k) * mean_logp;
      }
    }
  }
}

// loss = sum(row_loss) / N, one block, fixed order.
template <typename T>
__global__ void xent_total_kernel(int64_t n, const double* row_loss, T* loss) {
  double acc = 0;
  for (int64_t r = threadIdx.x; r < n; r += blockDim.x) acc += row_loss[r];
  acc = block_sum(acc);
  if (threadIdx.x == 0) loss[0] = from_f<T>(static_cast<float>(acc / static_cast<double>(n)));
}

template <typename T, typename L>
__global__ void xent_bwd_kernel(SoftmaxXentParams p, const T* probs, const L* labels, const T* dloss, T* dlogits) {
  const double eps = p.label_smoothing, off = eps / static_cast<double>(p.k);
  const double g = static_cast<double>(to_f(dloss[0])) / static_cast<double>(p.n);
  FASTNN_GRID_LOOP(i, p.n * p.k) {
    const int64_t r = i / p.k, j = i - r * p.k;
    const L label = labels[r];
    double v = g * (static_cast<double>(to_f(probs[i])) - off - (j == label ? 1 - eps : 0.0));
    if (bad(label, p.k)) v = NAN;
    dlogits[i] = from_f<T>(static_cast<float>(v));
  }
}

template <typename T, typename L>
__global__ void top_k_kernel(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels,
                             unsigned long long* correct, int* bad_label) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < n; r += warps) {
    const L label = labels[r];
    if (bad(label, classes)) {
      if (lane == 0) atomicCAS(bad_label, 0, static_cast<int>(r + 1 > 0x7fffffff ? 0x7fffffff : r + 1));
      continue;
    }
    const T* z = logits + r * classes;
    const float v = to_f(z[label]);
    unsigned greater = 0;
    for (int64_t j = lane; j < classes; j += 32) greater += to_f(z[j]) > v;
    for (int o = 16; o > 0; o >>= 1) greater += __shfl_xor_sync(0xffffffffu, greater, o);
    if (lane == 0 && static_cast<int64_t>(greater) < k) atomicAdd(correct, 1ull);
  }
}

unsigned warp_grid(int64_t rows) { return grid_for(rows * 32); }

}  // namespace

size_t bias_grad_workspace_bytes(int64_t n, int64_t k, int64_t inner) {
  return static_cast<size_t>(std::max<int64_t>(k, 1)) * static_cast<size_t>(ops::channel_split(n, k, inner).runs) *
         sizeof(double);
}

template <typename T>
void bias_grad(int64_t n, int64_t k, int64_t inner, const T* dy, T* db, void* ws, cudaStream_t s) {
  if (k == 0) return;
  FASTNN_CHECK(k <= 0x7fffffff, "bias_grad: ", k, " channels");
  if (!ws || n * inner == 0) {
    bias_grad_kernel<T><<<static_cast<unsigned>(k), kReduceThreads, 0, s>>>(n, k, inner, dy, db);
    CUDA_CHECK_LAUNCH();
    return;
  }
  const BatchNormParams p{.n = n, .c = k, .hw = inner};
  const BnSplit sp = bn_split(p);
  double* partials = static_cast<double*>(ws);
  if (by_rows(p))
    bias_rows_kernel<T><<<rows_grid(p, sp), rows_block(), 0, s>>>(p, sp, dy, partials);
  else
    bias_partial_kernel<T><<<dim3(static_cast<unsigned>(k), static_cast<unsigned>(sp.runs)), kReduceThreads, 0, s>>>(
        p, sp, hw_divider(p), dy, partials);
  CUDA_CHECK_LAUNCH();
  bias_finish_kernel<T><<<grid_for(k * 32), kThreads, 0, s>>>(k, sp.runs, partials, db);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void global_avg_pool_forward(int64_t planes, int64_t hw, const T* x, T* y, cudaStream_t s) {
  if (planes == 0) return;
  gap_fwd_kernel<T><<<warp_grid(planes), kThreads, 0, s>>>(planes, hw, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t hw, const T* dy, T* dx, cudaStream_t s) {
  const int64_t total = planes * hw;
  if (total == 0) return;
  gap_bwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, hw, dy, dx);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void global_avg_pool_forward_nhwc(int64_t n, int64_t hw, int64_t c, const T* x, T* y, cudaStream_t s) {
  if (n * c == 0) return;
  gap_nhwc_fwd_kernel<T><<<grid_for(n * c), kThreads, 0, s>>>(n, hw, c, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void global_avg_pool_backward_nhwc(int64_t n, int64_t hw, int64_t c, const T* dy, T* dx, cudaStream_t s) {
  const int64_t total = n * hw * c;
  if (total == 0) return;
  gap_nhwc_bwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, hw, c, dy, dx);
  CUDA_CHECK_LAUNCH();
}

size_t softmax_xent_workspace_bytes(const SoftmaxXentParams& p) { return static_cast<size_t>(p.n) * sizeof(double); }

template <typename T, typename L>
void softmax_xent_forward(const SoftmaxXentParams& p, const T* logits, const L* labels, T* loss, T* probs, void* ws,
                          int* bad_label, cudaStream_t s) {
  double* rows = static_cast<double*>(ws);
  xent_fwd_kernel<T, L><<<warp_grid(p.n), kThreads, 0, s>>>(p, logits, labels, probs, rows, bad_label);
  CUDA_CHECK_LAUNCH();
  xent_total_kernel<T><<<1, 1024, 0, s>>>(p.n, rows, loss);
  CUDA_CHECK_LAUNCH();
}

template <typename T, typename L>
void softmax_xent_backward(const SoftmaxXentParams& p, const T* probs, const L* labels, const T* dloss, T* dlogits,
                           cudaStream_t s) {
  xent_bwd_kernel<T, L><<<grid_for(p.n * p.k), kThreads, 0, s>>>(p, probs, labels, dloss, dlogits);
  CUDA_CHECK_LAUNCH();
}

template <typename T, typename L>
void top_k_count(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels, int64_t* correct,
                 int* bad_label, cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(correct, 0, sizeof(int64_t), s));
  if (n == 0) return;
  top_k_kernel<T, L><<<warp_grid(n), kThreads, 0, s>>>(n, classes, k, logits, labels,
                                                       reinterpret_cast<unsigned long long*>(correct), bad_label);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(T)                                                                                   \
  template void bias_grad<T>(int64_t, int64_t, int64_t, const T*, T*, void*, cudaStream_t);                   \
  template void global_avg_pool_forward<T>(int64_t, int64_t, const T*, T*, cudaStream_t);                     \
  template void global_avg_pool_backward<T>(int64_t, int64_t, const T*, T*, cudaStream_t);                    \
  template void global_avg_pool_forward_nhwc<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);        \
  template void global_avg_pool_backward_nhwc<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);       \
  FASTNN_INSTANTIATE_L(T, int32_t) FASTNN_INSTANTIATE_L(T, int64_t)
#define FASTNN_INSTANTIATE_L(T, L)                                                                              \
  template void softmax_xent_forward<T, L>(const SoftmaxXentParams&, const T*, const L*, T*, T*, void*, int*,   \
                                           cudaStream_t);                                                     \
  template void softmax_xent_backward<T, L>(const SoftmaxXentParams&, const T*, const L*, const T*, T*,        \
                                            cudaStream_t);                                                    \
  template void top_k_count<T, L>(int64_t, int64_t, int64_t, const T*, const L*, int64_t*, int*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE
#undef FASTNN_INSTANTIATE_L

}  // namespace fastnn::ops::gpu

