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

// Independent accumulators within a chunk: one double running sum is bound by the latency of its adds
// (and keeps the terms from vectorising); eight lanes, term k of a chunk going to lane (k - chunk start) % 8,
// are not. The lanes are added pairwise at the chunk's end.
inline constexpr size_t kReductionLanes = 8;
static_assert(kReductionChunk % kReductionLanes == 0);

// sum_of_chunks(n, chunk_sum): chunk_sum(begin, end) of each chunk [c * kReductionChunk, ...) of [0, n),
// in parallel, then the chunks' sums added in chunk order: the result depends on n only, bitwise the same
// for any thread count.
template <typename ChunkSum>
double sum_of_chunks(size_t n, ChunkSum chunk_sum) {
  const size_t chunks = (n + kReductionChunk - 1) / kReductionChunk;
  auto one = [&chunk_sum, n](size_t c) { return chunk_sum(c * kReductionChunk, std::min(n, (c + 1) * kReductionChunk)); };
  if (chunks <= 1) return chunks == 1 ? one(0) : 0.0;
  std::vector<double> partial(chunks);
  tbb::parallel_for(size_t{0}, chunks, [&](size_t c) { partial[c] = one(c); });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

// The sum of the squares of x[0, count) in double, x[j] going to lane j % kReductionLanes, the lanes added
// pairwise: a plain loop over an array, which the compiler vectorises (a costlier term computed inside
// such a loop does not vectorise: deterministic_sum_of_squares fills an array first).
inline double lane_sum_of_squares(const float* x, size_t count) {
  double a[kReductionLanes] = {};
  size_t j = 0;
  for (; j + kReductionLanes <= count; j += kReductionLanes)
    for (size_t l = 0; l < kReductionLanes; ++l) a[l] += static_cast<double>(x[j + l]) * x[j + l];
  for (size_t l = 0; j < count; ++j, ++l) a[l] += static_cast<double>(x[j]) * x[j];
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

// The sum of value(k)^2 for k in [0, n) in the same order, where value is costly (LAMB's direction):
// fill(begin, end, out) writes a chunk's values to out[0, end - begin), a loop the compiler vectorises,
// then they are squared and summed.
template <typename Fill>
double deterministic_sum_of_squares(size_t n, Fill fill) {
  return sum_of_chunks(n, [&fill](size_t b, size_t e) {
    float values[kReductionChunk];  // 64 KiB of stack: oneTBB's workers have megabytes
    fill(b, e, values);
    return lane_sum_of_squares(values, e - b);
  });
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
