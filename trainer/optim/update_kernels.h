// Fused optimizer updates and gradient statistics on the GPU: raw device pointers, one launch per
// parameter (or per list of gradients for the statistics). They mirror, element for element, the
// TensorFlow 1.x rules of the CPU optimizers (trainer/optim/): the same float operations in the same
// order, each rounded (no FMA contraction), so an f32 update with grad_scale 1 is bitwise the CPU's.
//
// Weights and optimizer state are f32 (the master copy); gradients are f32, f16 or bf16 (G) and are
// multiplied by `grad_scale` as they are read (1 / loss_scale under dynamic loss scaling, times a
// global-norm clipping factor if wanted), which fuses unscaling and clipping into the update.
// Nothing allocates; everything is ordered on `s`. CUDA builds only (update_kernels.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

namespace fastnn::optim::cuda {

// w -= lr * g
template <typename G>
void sgd_update(int64_t count, float lr, float grad_scale, float* w, const G* g, cudaStream_t s);
// a = m * a + g; w -= lr * a   (nesterov: w -= g * lr + a * m * lr)
template <typename G>
void momentum_update(int64_t count, float lr, float momentum, bool nesterov, float grad_scale, float* w, const G* g,
                     float* accum, cudaStream_t s);
// tf.train.AdamOptimizer: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); w -= m lr_t / (sqrt(v) + eps)
// with lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t) computed by the caller (the CPU's begin_step).
template <typename G>
void adam_update(int64_t count, float lr_t, float beta1, float beta2, float epsilon, float grad_scale, float* w,
                 const G* g, float* m, float* v, cudaStream_t s);
// BERT's AdamWeightDecay: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; u = m / (sqrt(v) + eps)
// (+ rate * w when rate != 0); w -= lr * u.
template <typename G>
void adam_weight_decay_update(int64_t count, float lr, float beta1, float beta2, float epsilon, float rate,
                              float grad_scale, float* w, const G* g, float* m, float* v, cudaStream_t s);

// tf.train.RMSPropOptimizer (centered=False): ms += (g^2 - ms)(1 - decay);
// mom = mom momentum + (g lr) / sqrt(ms + eps); w -= mom.
template <typename G>
void rmsprop_update(int64_t count, float lr, float decay, float momentum, float epsilon, float grad_scale, float* w,
                    const G* g, float* ms, float* mom, cudaStream_t s);
// tf.train.AdagradOptimizer: acc += g^2; w -= (g lr) / sqrt(acc).
template <typename G>
void adagrad_update(int64_t count, float lr, float grad_scale, float* w, const G* g, float* accum, cudaStream_t s);
// tf.train.AdadeltaOptimizer: acc = acc rho + g^2 (1 - rho); u = sqrt(up + eps) / sqrt(acc + eps) g;
// w -= u lr; up = up rho + u^2 (1 - rho).
template <typename G>
void adadelta_update(int64_t count, float lr, float rho, float epsilon, float grad_scale, float* w, const G* g,
                     float* accum, float* accum_update, cudaStream_t s);
// TF's ApplyFtrl (no l2 shrinkage), p = lr_power: acc' = acc + g^2;
// linear += g - (acc'^-p - acc^-p) / lr w; w = |linear| > l1 ? (sign(linear) l1 - linear) / (acc'^-p / lr + 2 l2)
// : 0; acc = acc'. lr must be > 0 (the caller checks, as the CPU's begin_step). With lr_power -0.5 (the
// default) the powers are IEEE square roots and the update is bitwise the CPU's; other powers use CUDA's
// powf, within 2 ulp of glibc's, so they are close but not bitwise.
template <typename G>
void ftrl_update(int64_t count, float lr, float lr_power, float l1, float l2, float grad_scale, float* w, const G* g,
                 float* accum, float* linear, cudaStream_t s);

// One gradient buffer for grad_stats.
struct GradView {
  const void* data = nullptr;
  int64_t count = 0;
  int dtype = 0;  // 0 f32, 1 f16, 2 bf16
};
// Bytes of device scratch grad_stats needs for these gradients.
size_t grad_stats_workspace_bytes(std::span<const GradView> grads);
// out[0] = sum of squares of every element (in double, fixed order: bitwise repeatable),
// out[1] = the number of non-finite elements (as a double): the global norm for clipping and the
// overflow check of dynamic loss scaling in one pass over the gradients. `out` is 2 device doubles.
void grad_stats(std::span<const GradView> grads, double* out, void* ws, cudaStream_t s);

}  // namespace fastnn::optim::cuda
