// top_k: how many samples have their label among the k highest logits (a metric; no backward).
//
//   inputs   logits [N, K], labels [N] (i32 or i64, in [0, K); else Error)
//   outputs  correct [1] (i64): the count, so that counts from several batches or workers add up
// Attributes: k (in [1, K], default 1).
// Sample n is correct iff fewer than k logits are strictly greater than logits[n, label_n]; so ties
// at the boundary count as correct (TensorFlow's in_top_k rule).
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_top_k(OpRegistry& registry);

namespace cpu {
template <typename T, typename L>
int64_t top_k_count(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/reduce_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
// *correct (device int64) = the count; bad labels set *bad_label as above and count as wrong.
template <typename T, typename L>
void top_k_count(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels, int64_t* correct,
                 int* bad_label, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (top_k_cuda.cpp); register_top_k adds it.
void register_top_k_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
