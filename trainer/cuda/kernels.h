// The custom CUDA kernels of the trainer ops: the mirror of the CPU typed functions (ops/<op>.h,
// namespace fastnn::ops::cpu) in namespace fastnn::ops::cuda, same names and argument order plus a
// trailing cudaStream_t. Pointers are device pointers; nothing here allocates or synchronises
// (except where a comment says so); every launcher checks the launch (CUDA_CHECK_LAUNCH).
//
// T is float, __half or __nv_bfloat16 (storage type; arithmetic in float, reductions in double);
// L (labels) is int32_t or int64_t. The kernels live in three .cu files: elementwise_kernels.cu,
// reduce_kernels.cu, window_kernels.cu. The cuDNN / cuBLAS ops (conv2d, fully_connected) are host
// code in ops/*_cuda.cpp and use the helpers at the end.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "trainer/ops/batch_norm.h"
#include "trainer/ops/lrn.h"
#include "trainer/ops/softmax_xent.h"
#include "trainer/ops/window2d.h"

namespace fastnn::ops::cuda {

// ---- elementwise (elementwise_kernels.cu) ------------------------------------------------------
template <typename T>
void add_forward(int64_t count, std::span<const T* const> xs, T* y, cudaStream_t s);  // <= 16 inputs
template <typename T>
void scale_forward(int64_t count, float scale, const T* x, T* y, cudaStream_t s);
template <typename T>
void relu_forward(int64_t count, const T* x, T* y, cudaStream_t s);
template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s);
template <typename T>
void tanh_forward(int64_t count, float outer, float inner, const T* x, T* y, cudaStream_t s);
template <typename T>
void tanh_backward(int64_t count, float outer, float inner, const T* y, const T* dy, T* dx, cudaStream_t s);
// The mask bit of element i is philox_word(seed, step, i) >= dropout_threshold(rate): the CPU's.
template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const T* x, T* y, uint8_t* mask,
                     cudaStream_t s);
template <typename T>
void dropout_backward(int64_t count, double rate, const uint8_t* mask, const T* dy, T* dx, cudaStream_t s);
// y[n, k, i] += b[k] for y [N, K, inner].
template <typename T>
void bias_add(int64_t n, int64_t k, int64_t inner, const T* b, T* y, cudaStream_t s);
// Zero-padded copy x [N*C, H, W] -> xp [N*C, H+top+bottom, W+left+right], and the inverse crop.
template <typename T>
void pad2d(int64_t planes, int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right,
           const T* x, T* xp, cudaStream_t s);
template <typename T>
void crop2d(int64_t planes, int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right,
            const T* xp, T* x, cudaStream_t s);

// ---- reductions (reduce_kernels.cu) ------------------------------------------------------------
// db[k] = sum over n, i of dy[n, k, i] (dy [N, K, inner]); summed in double.
template <typename T>
void bias_grad(int64_t n, int64_t k, int64_t inner, const T* dy, T* db, cudaStream_t s);
template <typename T>
void global_avg_pool_forward(int64_t planes, int64_t hw, const T* x, T* y, cudaStream_t s);
template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t hw, const T* dy, T* dx, cudaStream_t s);

template <typename T>
void batch_norm_forward_training(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                                 T* running_mean, T* running_var, T* y, T* save_mean, T* save_invstd,
                                 cudaStream_t s);
template <typename T>
void batch_norm_forward_inference(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                                  const T* running_mean, const T* running_var, T* y, T* save_mean,
                                  T* save_invstd, cudaStream_t s);
// ws: batch_norm_workspace_bytes(p) bytes. dx, dgamma, dbeta may each be null.
size_t batch_norm_workspace_bytes(const BatchNormParams& p);
template <typename T>
void batch_norm_backward(const BatchNormParams& p, bool training, const T* x, const T* gamma, const T* save_mean,
                         const T* save_invstd, const T* dy, T* dx, T* dgamma, T* dbeta, void* ws, cudaStream_t s);

// ws: softmax_xent_workspace_bytes(p). bad_label: device int, set to 1 + the first sample whose label
// is outside [0, K) (the caller zeroes it and checks it); such a row's loss is NaN.
size_t softmax_xent_workspace_bytes(const SoftmaxXentParams& p);
template <typename T, typename L>
void softmax_xent_forward(const SoftmaxXentParams& p, const T* logits, const L* labels, T* loss, T* probs, void* ws,
                          int* bad_label, cudaStream_t s);
// A bad label's row gets NaN gradients.
template <typename T, typename L>
void softmax_xent_backward(const SoftmaxXentParams& p, const T* probs, const L* labels, const T* dloss, T* dlogits,
                           cudaStream_t s);
// *correct (device int64) = the count; bad labels set *bad_label as above and count as wrong.
template <typename T, typename L>
void top_k_count(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels, int64_t* correct,
                 int* bad_label, cudaStream_t s);

// ---- windows (window_kernels.cu) ---------------------------------------------------------------
template <typename T>
void max_pool2d_forward(const Pool2dParams& p, const T* x, T* y, cudaStream_t s);
template <typename T>
void max_pool2d_backward(const Pool2dParams& p, const T* x, const T* dy, T* dx, cudaStream_t s);
template <typename T>
void avg_pool2d_forward(const Pool2dParams& p, const T* x, T* y, cudaStream_t s);
template <typename T>
void avg_pool2d_backward(const Pool2dParams& p, const T* dy, T* dx, cudaStream_t s);
template <typename T>
void lrn_forward(const LrnParams& p, const T* x, T* y, T* scale, cudaStream_t s);
// ws: N*C*H*W floats.
template <typename T>
void lrn_backward(const LrnParams& p, const T* x, const T* scale, const T* dy, T* dx, float* ws, cudaStream_t s);

}  // namespace fastnn::ops::cuda
