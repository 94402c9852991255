#include "trainer/optim/gradient_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"

namespace fastnn {

void add_weight_decay(std::span<const ParamRef> params, double weight_decay) {
  FASTNN_CHECK(weight_decay >= 0.0, "weight_decay must be >= 0, got ", weight_decay);
  if (weight_decay == 0.0) return;
  const float wd = static_cast<float>(weight_decay);
  for (const ParamRef& p : params) {
    if (!p.decay) continue;
    float* g = p.grad;
    const float* w = p.value;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) g[k] += wd * w[k];
    });
  }
}

namespace {

double sum_of_squares(const float* g, size_t n) {
  return sum_of_chunks(n, [g](size_t b, size_t e) { return lane_sum_of_squares(g + b, e - b); });
}

}  // namespace

double l2_norm(const float* x, size_t n) { return std::sqrt(sum_of_squares(x, n)); }

double global_norm(std::span<const ParamRef> params) {
  double total = 0.0;
  for (const ParamRef& p : params) total += sum_of_squares(p.grad, p.count);
  return std::sqrt(total);
}

double clip_by_global_norm(std::span<const ParamRef> params, double clip_norm) {
  FASTNN_CHECK(clip_norm > 0.0, "max_gradient_norm must be > 0, got ", clip_norm);
  const double norm = global_norm(params);
  float scale;
  if (!std::isfinite(norm)) {
    scale = std::numeric_limits<float>::quiet_NaN();
  } else if (norm > clip_norm) {
    scale = static_cast<float>(clip_norm / norm);
  } else {
    return norm;  // scale would be exactly 1
  }
  scale_gradients(params, scale);
  return norm;
}

void scale_gradients(std::span<const ParamRef> params, float factor) {
  for (const ParamRef& p : params) {
    float* g = p.grad;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) g[k] *= factor;
    });
  }
}

}  // namespace fastnn
