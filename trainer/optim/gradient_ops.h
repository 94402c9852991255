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

#include <span>

#include "trainer/optim/optimizer.h"

namespace fastnn {

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
