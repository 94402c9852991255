// softmax_xent: softmax cross-entropy with label smoothing and class weights, mean over the batch.
//
//   inputs   logits [N, K] (compute dtype), labels [N] (i32 or i64, each in [0, K); else Error)
//   outputs  loss [1]
//   saved    probs [N, K] = softmax(logits)
// Attributes: label_smoothing (eps in [0, 1), default 0); class_weights (K numbers > 0, default none:
// all 1), CPU only.
//   q[n,k] = (1 - eps) * [k == label_n] + eps / K
//   loss   = (1/N) * sum_n sum_k -q[n,k] * log softmax(logits[n])[k]
// With class weights w, PyTorch's CrossEntropyLoss(weight=w, label_smoothing=eps) (mean reduction):
//   loss   = (1/W) * sum_n [(1 - eps) w[y_n] (-log p[n,y_n]) + (eps/K) sum_k w[k] (-log p[n,k])],
//   W      = sum_n w[y_n]
// which is the unweighted loss when every w is 1.
// Backward: dlogits = dloss * (probs - q) / N; weighted, dloss / W * (((1 - eps) w[y] + (eps/K) S) p[j]
// - (eps/K) w[j] - (1 - eps) w[y] [j == y]) with S = sum_k w[k]; labels have no gradient. The usual
// training call is forward, then backward with dloss = 1 (which yields loss and dlogits from one pass
// over the rows).
// CPU: rows in parallel, arithmetic in double, per-row losses summed in row order (the workspace
// holds N doubles; after a forward, softmax_xent_row_terms reads them).
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

struct SoftmaxXentParams {
  int64_t n = 0, k = 0;
  double label_smoothing = 0;
  std::vector<double> class_weights;  // K, each > 0; empty: unweighted
};

void register_softmax_xent(OpRegistry& registry);

// After the CPU kernel's forward: each row's term of the loss's sum (the loss is their sum over N, or
// over W with class weights), from its workspace (`workspace` as given to the forward, `n` rows). What
// a per-sample weighting of the loss needs (TrainStep's mixup in pair and elem modes).
std::vector<double> softmax_xent_row_terms(const Tensor& workspace, int64_t n);
// What those row terms are divided by: N, or W = sum_n w[y_n] with class weights (`labels` i32 or i64
// on the host, in range: a forward checked them).
double softmax_xent_divisor(const std::vector<double>& class_weights, const Tensor& labels);

namespace cpu {
// L is int32_t or int64_t. row_loss: N doubles of scratch. Throws Error on a label outside [0, K).
template <typename T, typename L>
void softmax_xent_forward(const SoftmaxXentParams& p, const T* logits, const L* labels, T* loss, T* probs,
                          double* row_loss);
template <typename T, typename L>
void softmax_xent_backward(const SoftmaxXentParams& p, const T* probs, const L* labels, const T* dloss, T* dlogits);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/reduce_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
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
}  // namespace gpu
// The kCuda kernel (softmax_xent_cuda.cpp); register_softmax_xent adds it.
void register_softmax_xent_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
