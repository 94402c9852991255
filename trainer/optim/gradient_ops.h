// What FastNN's training script does to gradients before the optimizer step, on float32 CPU buffers:
//
//   add_weight_decay      TF-slim's l2_regularizer(weight_decay) on weights: loss += wd/2 * sum(w^2),
//                         i.e. grad += weight_decay * w for every ParamRef with decay == true
//                         (biases and batch/layer-norm parameters have decay == false).
//   clip_by_global_norm   tf.clip_by_global_norm: n = sqrt(sum of all squared gradients);
//                         grad *= clip_norm / max(n, clip_norm). A non-finite n turns every gradient
//                         into NaN, as TF does, so an overflow is never silently applied.
//
// Order, as in FastNN: add_weight_decay, then clip_by_global_norm (when max_gradient_norm is set), then
// Optimizer::step. Reductions are summed in double over fixed-size chunks in a fixed order, so the norm
// is bitwise the same for any thread count.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include <tbb/parallel_for.h>

#include "trainer/optim/optimizer.h"

namespace fastnn {

// Chunk size of the deterministic reductions: partial sums are always over the same index ranges.
inline constexpr size_t kReductionChunk = size_t{1} << 14;

// The sum of term(k) for k in [0, n), in double: chunks of kReductionChunk summed in parallel, then the
// partial sums added in chunk order, so the result is bitwise the same for any thread count.
template <typename Term>
double deterministic_sum(size_t n, Term term) {
  const size_t chunks = (n + kReductionChunk - 1) / kReductionChunk;
  auto chunk_sum = [&term, n](size_t c) {
    double s = 0.0;
    const size_t end = std::min(n, (c + 1) * kReductionChunk);
    for (size_t k = c * kReductionChunk; k < end; ++k) s += term(k);
    return s;
  };
  if (chunks <= 1) return chunks == 1 ? chunk_sum(0) : 0.0;
  std::vector<double> partial(chunks);
  tbb::parallel_for(size_t{0}, chunks, [&](size_t c) { partial[c] = chunk_sum(c); });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

void add_weight_decay(std::span<const ParamRef> params, double weight_decay);

// sqrt of the sum of squares of n floats (double accumulation, the same chunked order as global_norm).
double l2_norm(const float* x, size_t n);

// sqrt of the sum of squares of all gradients (double accumulation).
double global_norm(std::span<const ParamRef> params);

// grad *= factor for every parameter (the clipping multiply; factor NaN poisons every gradient).
void scale_gradients(std::span<const ParamRef> params, float factor);

// Clips in place; returns the norm before clipping (log it; a non-finite value means overflow).
// clip_norm must be > 0.
double clip_by_global_norm(std::span<const ParamRef> params, double clip_norm);

}  // namespace fastnn
