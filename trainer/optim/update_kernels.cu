// Fused optimizer updates and the gradient statistics kernel (optim/update_kernels.h).
#include "trainer/cuda/device_util.cuh"
#include "trainer/optim/update_kernels.h"

namespace fastnn::optim::cuda {

namespace {

using ::fastnn::cuda::block_sum;
using ::fastnn::cuda::grid_for;
using ::fastnn::cuda::kThreads;
using ::fastnn::cuda::to_f;

// The updates use explicitly rounded intrinsics (__fmul_rn etc. are never fused into FMAs), in the
// CPU's evaluation order; IEEE sqrt and division are correctly rounded on both sides, so with
// grad_scale 1 an f32 update is bitwise the CPU optimizer's (g++ does not contract in ISO C++ mode).
template <typename G>
__device__ __forceinline__ float grad_at(const G* g, int64_t k, float gs) {
  return __fmul_rn(to_f(g[k]), gs);
}

template <typename G>
__global__ void sgd_kernel(int64_t count, float lr, float gs, float* w, const G* g) {
  FASTNN_GRID_LOOP(k, count) w[k] = __fsub_rn(w[k], __fmul_rn(lr, grad_at(g, k, gs)));
}

template <typename G>
__global__ void momentum_kernel(int64_t count, float lr, float m, bool nesterov, float gs, float* w, const G* g,
                                float* a) {
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float ak = __fadd_rn(__fmul_rn(m, a[k]), gk);
    a[k] = ak;
    if (nesterov) w[k] = __fsub_rn(w[k], __fadd_rn(__fmul_rn(gk, lr), __fmul_rn(__fmul_rn(ak, m), lr)));
    else w[k] = __fsub_rn(w[k], __fmul_rn(lr, ak));
  }
}

template <typename G>
__global__ void adam_kernel(int64_t count, float lr_t, float one_minus_b1, float one_minus_b2, float eps, float gs,
                            float* w, const G* g, float* m, float* v) {
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float mk = __fadd_rn(m[k], __fmul_rn(__fsub_rn(gk, m[k]), one_minus_b1));
    const float vk = __fadd_rn(v[k], __fmul_rn(__fsub_rn(__fmul_rn(gk, gk), v[k]), one_minus_b2));
    m[k] = mk;
    v[k] = vk;
    w[k] = __fsub_rn(w[k], __fdiv_rn(__fmul_rn(mk, lr_t), __fadd_rn(__fsqrt_rn(vk), eps)));
  }
}

template <typename G>
__global__ void adamw_kernel(int64_t count, float lr, float b1, float b2, float eps, float rate, float gs, float* w,
                             const G* g, float* m, float* v) {
  const float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float mk = __fadd_rn(__fmul_rn(b1, m[k]), __fmul_rn(omb1, gk));
    const float vk = __fadd_rn(__fmul_rn(b2, v[k]), __fmul_rn(omb2, __fmul_rn(gk, gk)));
    m[k] = mk;
    v[k] = vk;
    float u = __fdiv_rn(mk, __fadd_rn(__fsqrt_rn(vk), eps));
    if (rate != 0.0f) u = __fadd_rn(u, __fmul_rn(rate, w[k]));
    w[k] = __fsub_rn(w[k], __fmul_rn(lr, u));
  }
}

// The CPU's `ms[k] += (g*g - ms[k]) * one_minus_decay; mom[k] = mom[k]*momentum + (g*lr) / sqrt(ms[k] + eps)`.
template <typename G>
__global__ void rmsprop_kernel(int64_t count, float lr, float one_minus_decay, float momentum, float eps, float gs,
                               float* w, const G* g, float* ms, float* mom) {
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float msk = __fadd_rn(ms[k], __fmul_rn(__fsub_rn(__fmul_rn(gk, gk), ms[k]), one_minus_decay));
    const float momk =
        __fadd_rn(__fmul_rn(mom[k], momentum), __fdiv_rn(__fmul_rn(gk, lr), __fsqrt_rn(__fadd_rn(msk, eps))));
    ms[k] = msk;
    mom[k] = momk;
    w[k] = __fsub_rn(w[k], momk);
  }
}

// The CPU's `acc[k] += g*g; w[k] -= g*lr / sqrt(acc[k])`.
template <typename G>
__global__ void adagrad_kernel(int64_t count, float lr, float gs, float* w, const G* g, float* acc) {
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float ak = __fadd_rn(acc[k], __fmul_rn(gk, gk));
    acc[k] = ak;
    w[k] = __fsub_rn(w[k], __fdiv_rn(__fmul_rn(gk, lr), __fsqrt_rn(ak)));
  }
}

// The CPU's `acc = acc*rho + g*g*(1-rho); u = sqrt(up + eps) / sqrt(acc + eps) * g; w -= u*lr;
// up = up*rho + u*u*(1-rho)`.
template <typename G>
__global__ void adadelta_kernel(int64_t count, float lr, float rho, float one_minus_rho, float eps, float gs,
                                float* w, const G* g, float* acc, float* up) {
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float ak = __fadd_rn(__fmul_rn(acc[k], rho), __fmul_rn(__fmul_rn(gk, gk), one_minus_rho));
    acc[k] = ak;
    const float u = __fmul_rn(__fdiv_rn(__fsqrt_rn(__fadd_rn(up[k], eps)), __fsqrt_rn(__fadd_rn(ak, eps))), gk);
    w[k] = __fsub_rn(w[k], __fmul_rn(u, lr));
    up[k] = __fadd_rn(__fmul_rn(up[k], rho), __fmul_rn(__fmul_rn(u, u), one_minus_rho));
  }
}

// The CPU's ApplyFtrl loop, operation for operation.
template <typename G>
__global__ void ftrl_kernel(int64_t count, float lr, float neg_power, bool sqrt_power, float l1, float two_l2,
                            float gs, float* w, const G* g, float* acc, float* lin) {
  FASTNN_GRID_LOOP(k, count) {
    const float gk = grad_at(g, k, gs);
    const float old_acc = acc[k];
    const float new_acc = __fadd_rn(old_acc, __fmul_rn(gk, gk));
    const float pow_new = sqrt_power ? __fsqrt_rn(new_acc) : powf(new_acc, neg_power);
    const float pow_old = sqrt_power ? __fsqrt_rn(old_acc) : powf(old_acc, neg_power);
    const float lk = __fadd_rn(lin[k], __fsub_rn(gk, __fmul_rn(__fdiv_rn(__fsub_rn(pow_new, pow_old), lr), w[k])));
    lin[k] = lk;
    const float quadratic = __fadd_rn(__fdiv_rn(pow_new, lr), two_l2);
    if (fabsf(lk) > l1) {
      const float sign_l1 = lk > 0.0f ? l1 : -l1;
      w[k] = __fdiv_rn(__fsub_rn(sign_l1, lk), quadratic);
    } else {
      w[k] = 0.0f;
    }
    acc[k] = new_acc;
  }
}

constexpr int kStatThreads = 256;
constexpr int64_t kPerThread = 8;

int64_t stat_blocks(int64_t count) {
  const int64_t b = (count + kStatThreads * kPerThread - 1) / (kStatThreads * kPerThread);
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

// Per-block partial (sum of squares of finite values, count of non-finite) of one gradient buffer.
template <typename G>
__global__ void grad_partials_kernel(int64_t count, const G* g, double* partials) {
  double ss = 0, bad = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = to_f(g[i]);
    if (isfinite(v)) ss += static_cast<double>(v) * v;
    else bad += 1;
  }
  ss = block_sum(ss);
  bad = block_sum(bad);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = ss;
    partials[2 * blockIdx.x + 1] = bad;
  }
}

__global__ void grad_total_kernel(int64_t n, const double* partials, double* out) {
  double ss = 0, bad = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    ss += partials[2 * i];
    bad += partials[2 * i + 1];
  }
  ss = block_sum(ss);
  bad = block_sum(bad);
  if (threadIdx.x == 0) {
    out[0] = ss;
    out[1] = bad;
  }
}

template <typename G>
void launch_partials(const GradView& v, double* partials, cudaStream_t s) {
  grad_partials_kernel<G><<<static_cast<unsigned>(stat_blocks(v.count)), kStatThreads, 0, s>>>(
      v.count, static_cast<const G*>(v.data), partials);
}

}  // namespace

template <typename G>
void sgd_update(int64_t count, float lr, float grad_scale, float* w, const G* g, cudaStream_t s) {
  if (count == 0) return;
  sgd_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, grad_scale, w, g);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void momentum_update(int64_t count, float lr, float momentum, bool nesterov, float grad_scale, float* w, const G* g,
                     float* accum, cudaStream_t s) {
  if (count == 0) return;
  momentum_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, momentum, nesterov, grad_scale, w, g, accum);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void adam_update(int64_t count, float lr_t, float beta1, float beta2, float epsilon, float grad_scale, float* w,
                 const G* g, float* m, float* v, cudaStream_t s) {
  if (count == 0) return;
  adam_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr_t, 1.0f - beta1, 1.0f - beta2, epsilon, grad_scale, w,
                                                      g, m, v);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void adam_weight_decay_update(int64_t count, float lr, float beta1, float beta2, float epsilon, float rate,
                              float grad_scale, float* w, const G* g, float* m, float* v, cudaStream_t s) {
  if (count == 0) return;
  adamw_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, beta1, beta2, epsilon, rate, grad_scale, w, g, m,
                                                       v);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void rmsprop_update(int64_t count, float lr, float decay, float momentum, float epsilon, float grad_scale, float* w,
                    const G* g, float* ms, float* mom, cudaStream_t s) {
  if (count == 0) return;
  rmsprop_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, 1.0f - decay, momentum, epsilon, grad_scale, w, g,
                                                         ms, mom);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void adagrad_update(int64_t count, float lr, float grad_scale, float* w, const G* g, float* accum, cudaStream_t s) {
  if (count == 0) return;
  adagrad_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, grad_scale, w, g, accum);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void adadelta_update(int64_t count, float lr, float rho, float epsilon, float grad_scale, float* w, const G* g,
                     float* accum, float* accum_update, cudaStream_t s) {
  if (count == 0) return;
  adadelta_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, rho, 1.0f - rho, epsilon, grad_scale, w, g,
                                                          accum, accum_update);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void ftrl_update(int64_t count, float lr, float lr_power, float l1, float l2, float grad_scale, float* w, const G* g,
                 float* accum, float* linear, cudaStream_t s) {
  if (count == 0) return;
  FASTNN_CHECK(lr > 0.0f, "ftrl needs a learning rate > 0, got ", lr);
  ftrl_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, lr, -lr_power, lr_power == -0.5f, l1, 2.0f * l2,
                                                      grad_scale, w, g, accum, linear);
  CUDA_CHECK_LAUNCH();
}

size_t grad_stats_workspace_bytes(std::span<const GradView> grads) {
  int64_t blocks = 0;
  for (const GradView& v : grads) blocks += stat_blocks(v.count);
  return static_cast<size_t>(blocks) * 2 * sizeof(double);
}

void grad_stats(std::span<const GradView> grads, double* out, void* ws, cudaStream_t s) {
  double* partials = static_cast<double*>(ws);
  int64_t off = 0;
  for (const GradView& v : grads) {
    FASTNN_CHECK(v.dtype >= 0 && v.dtype <= 2, "grad_stats: dtype code ", v.dtype);
    if (v.dtype == 0) launch_partials<float>(v, partials + 2 * off, s);
    else if (v.dtype == 1) launch_partials<__half>(v, partials + 2 * off, s);
    else launch_partials<__nv_bfloat16>(v, partials + 2 * off, s);
    CUDA_CHECK_LAUNCH();
    off += stat_blocks(v.count);
  }
  if (off == 0) {
    CUDA_CHECK(cudaMemsetAsync(out, 0, 2 * sizeof(double), s));
    return;
  }
  grad_total_kernel<<<1, 1024, 0, s>>>(off, partials, out);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(G)                                                                                   \
  template void sgd_update<G>(int64_t, float, float, float*, const G*, cudaStream_t);                          \
  template void momentum_update<G>(int64_t, float, float, bool, float, float*, const G*, float*, cudaStream_t); \
  template void adam_update<G>(int64_t, float, float, float, float, float, float*, const G*, float*, float*,   \
                               cudaStream_t);                                                                  \
  template void adam_weight_decay_update<G>(int64_t, float, float, float, float, float, float, float*, const G*, \
                                            float*, float*, cudaStream_t);                                   \
  template void rmsprop_update<G>(int64_t, float, float, float, float, float, float*, const G*, float*, float*, \
                                  cudaStream_t);                                                               \
  template void adagrad_update<G>(int64_t, float, float, float*, const G*, float*, cudaStream_t);               \
  template void adadelta_update<G>(int64_t, float, float, float, float, float*, const G*, float*, float*,       \
                                   cudaStream_t);                                                              \
  template void ftrl_update<G>(int64_t, float, float, float, float, float, float*, const G*, float*, float*,    \
                               cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace fastnn::optim::cuda
