// batch_norm: per-channel normalisation over the batch (and H, W), NCHW.
//
//   inputs   x [N, C] or [N, C, H, W]
//   params   gamma [C] (init ones), beta [C] (init zeros)
//   state    running_mean [C] (zeros), running_var [C] (ones)
//   outputs  y, same shape as x
//   saved    mean [C], invstd [C]: the statistics forward normalised with
// Attributes: momentum (default 0.9), epsilon (default 1e-5).
//
// Training (M = N*H*W values per channel):
//   mean = sum(x)/M, var = sum((x-mean)^2)/M (biased), invstd = 1/sqrt(var + epsilon)
//   y = gamma * (x - mean) * invstd + beta
//   running_mean = momentum * running_mean + (1 - momentum) * mean
//   running_var  = momentum * running_var  + (1 - momentum) * var * M/(M-1)   (unbiased; M = 1: var)
// ("momentum" is the weight of the old value, as in Keras / tf.layers, not PyTorch's.)
// Eval: mean = running_mean, invstd = 1/sqrt(running_var + epsilon); state is not touched.
// Backward, training: dbeta = sum(dy), dgamma = sum(dy * xhat),
//   dx = gamma * invstd * (dy - dbeta/M - xhat * dgamma/M), xhat = (x - mean) * invstd.
// Backward, eval (frozen statistics): dx = gamma * invstd * dy; dgamma, dbeta as above.
// CPU: channels in parallel; sums in double, in a fixed order.
//
// Synchronised (ForwardArgs/BackwardArgs::replicas set, training only; CPU backend): the statistics
// are those of every replica's batch together, as one process with the whole global batch would
// compute them: sum(x) and the count, then sum((x - mean)^2), are summed over replicas (two
// collectives), and backward sums sum(dy), sum(dy * xhat) and the count over replicas before dx
// (a third). dgamma and dbeta stay this replica's own sums: the gradient average over replicas that
// follows turns them into the global batch's. Host scratch: 2C + 1 doubles.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

struct BatchNormParams {
  int64_t n = 0, c = 0, hw = 1;  // hw = H*W (1 for rank-2 inputs)
  double momentum = 0.9, epsilon = 1e-5;
};

BatchNormParams batch_norm_params(const Attrs& attrs, std::span<const TensorSpec> inputs);
OpSignature batch_norm_signature(const BatchNormParams& p, const Shape& x_shape, DType dtype);
void register_batch_norm(OpRegistry& registry);
// The kCpu NHWC kernel (batch_norm_nhwc.cpp); register_batch_norm adds it.
void register_batch_norm_nhwc_cpu(OpRegistry& registry);

namespace cpu {
template <typename T>
void batch_norm_forward_training(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                                 T* running_mean, T* running_var, T* y, T* save_mean, T* save_invstd,
                                 CrossReplicaSum* replicas = nullptr);
// Writes save_mean / save_invstd from the running statistics too, for the eval-mode backward.
template <typename T>
void batch_norm_forward_inference(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                                  const T* running_mean, const T* running_var, T* y, T* save_mean,
                                  T* save_invstd);
// dx, dgamma, dbeta may each be null (not wanted).
template <typename T>
void batch_norm_backward(const BatchNormParams& p, bool training, const T* x, const T* gamma,
                         const T* save_mean, const T* save_invstd, const T* dy, T* dx, T* dgamma, T* dbeta,
                         CrossReplicaSum* replicas = nullptr);
}  // namespace cpu

// The activation a fused batch norm applies to its output (the fuse_ops rewrite): none, relu
// (batch_norm+relu, batch_norm+add+relu) or relu6 (batch_norm+relu6: MobileNet), each bitwise its own
// op's kernel after batch norm's; its gradient passes where the layer's output is inside the open range
// (relu: y > 0; relu6: 0 < y < 6).
enum class BnActivation { kNone, kRelu, kRelu6 };

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/batch_norm_kernels.cu): the CPU functions' names and arguments plus a stream; T is
// float, __half or __nv_bfloat16 for x, y and their gradients, pointers are device pointers; nothing
// allocates. gamma, beta, the running and the saved statistics and their gradients are f32 whatever T
// is (as cuDNN and PyTorch's AMP keep them): the CUDA kernel's signature says so.
namespace gpu {
// ws: batch_norm_workspace_bytes(p) bytes (the statistics' partial sums).
template <typename T>
void batch_norm_forward_training(const BatchNormParams& p, const T* x, const float* gamma, const float* beta,
                                 float* running_mean, float* running_var, T* y, float* save_mean, float* save_invstd,
                                 void* ws, cudaStream_t s);
template <typename T>
void batch_norm_forward_inference(const BatchNormParams& p, const T* x, const float* gamma, const float* beta,
                                  const float* running_mean, const float* running_var, T* y, float* save_mean,
                                  float* save_invstd, cudaStream_t s);
// ws: batch_norm_workspace_bytes(p) bytes. dx, dgamma, dbeta may each be null.
size_t batch_norm_workspace_bytes(const BatchNormParams& p);
template <typename T>
void batch_norm_backward(const BatchNormParams& p, bool training, const T* x, const float* gamma,
                         const float* save_mean, const float* save_invstd, const T* dy, T* dx, float* dgamma,
                         float* dbeta, void* ws, cudaStream_t s);
// batch_norm followed by relu or relu6 (act) in one layer (the fuse_ops rewrite; the fusions registered
// for kCuda): y = act(batch_norm(x)) written in one pass, bitwise the two kernels in a row; the backward
// uses dy where act passes (0 elsewhere) as batch norm's incoming gradient, without writing it out. Where
// act passes is read from the layer's output y, or, given the forward's beta (y = act(batch_norm(x))
// exactly, no residual), recomputed from x by the NHWC packed kernels: one tensor fewer read in each of
// the backward's two passes. ws: batch_norm_workspace_bytes(p).
template <typename T>
void batch_norm_relu_forward(const BatchNormParams& p, bool training, const T* x, const float* gamma,
                             const float* beta, float* running_mean, float* running_var, T* y, float* save_mean,
                             float* save_invstd, void* ws, cudaStream_t s, BnActivation act = BnActivation::kRelu);
template <typename T>
void batch_norm_relu_backward(const BatchNormParams& p, bool training, const T* x, const float* gamma,
                              const float* save_mean, const float* save_invstd, const T* y, const T* dy, T* dx,
                              float* dgamma, float* dbeta, void* ws, cudaStream_t s,
                              BnActivation act = BnActivation::kRelu, const float* beta = nullptr);
// batch_norm, plus the residual r, then relu (a residual unit's end: the fuse_ops rewrite
// "batch_norm+add+relu"): y = relu(z + r) with z = batch_norm(x) rounded to T, written in one pass
// without z, bitwise batch norm's kernel then add+relu's. (Its backward needs no kernel of its own: the
// relu's gradient is written once, into r's gradient, and batch_norm_backward reads it.)
template <typename T>
void batch_norm_add_relu_forward(const BatchNormParams& p, bool training, const T* x, const T* r, const float* gamma,
                                 const float* beta, float* running_mean, float* running_var, T* y, float* save_mean,
                                 float* save_invstd, void* ws, cudaStream_t s);
// The training forward from x's per-channel sums, sums = [Σx (C), Σx² (C)] f32 over N·H·W (the
// fuse_conv_bn rewrite: cuDNN's convolution wrote them in its epilogue) instead of a statistics pass:
// mean and biased variance (E[x²] − mean², in double from f32 sums, without the running-mean shift that
// batch_norm_forward_training's own sums take) give the saved and running statistics by its finishing
// formulas, then its normalise pass with act; r: the residual of
// batch_norm+add+relu (act relu), or null.
template <typename T>
void batch_norm_forward_from_sums(const BatchNormParams& p, const float* sums, const T* x, const T* r,
                                  const float* gamma, const float* beta, float* running_mean, float* running_var, T* y,
                                  float* save_mean, float* save_invstd, cudaStream_t s, BnActivation act);
}  // namespace gpu
// The kCuda kernel (batch_norm_cuda.cpp); register_batch_norm adds it.
void register_batch_norm_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
