#include "trainer/loop/update_order.h"

#include <cmath>
#include <limits>

namespace fastnn::loop {

float clip_factor(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0f;
  if (!std::isfinite(norm)) return std::numeric_limits<float>::quiet_NaN();
  return norm > max_norm ? static_cast<float>(max_norm / norm) : 1.0f;
}

UpdateOutcome apply_update(const UpdateStages& s, const UpdatePolicy& p) {
  UpdateOutcome out;
  if (s.average) s.average();
  if (s.decay) s.decay();
  const bool clip = p.max_gradient_norm > 0;
  float factor = 1.0f;
  if (clip || p.scaler) {
    const GradientCheck g = s.check();
    out.norm = g.norm;
    if (p.scaler && !p.scaler->update(g.overflow || !std::isfinite(g.norm))) {
      out.applied = false;
      return out;
    }
    factor = clip_factor(g.norm, p.max_gradient_norm);
  }
  s.apply(factor);
  return out;
}

}  // namespace fastnn::loop
