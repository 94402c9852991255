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

namespace fastnn::ops {

void register_top_k(OpRegistry& registry);

namespace cpu {
template <typename T, typename L>
int64_t top_k_count(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels);
}  // namespace cpu
}  // namespace fastnn::ops
