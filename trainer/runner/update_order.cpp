#include "trainer/runner/update_order.h"

namespace fastnn::runner {

UpdateOutcome apply_update(const UpdateStages& s, const UpdatePolicy& p) {
  UpdateOutcome out;
  if (s.average) s.average();
  if (s.decay) s.decay();
  if (s.decide_on_device) {  // the device checks and decides (the same rule::decide) without a host read
    s.decide_on_device();
    s.apply(1.0f);
    return out;
  }
  float factor = 1.0f;
  if (p.max_gradient_norm > 0 || p.scaler) {
    const GradientCheck g = s.check();
    out.norm = g.norm;
    optim::rule::ScalerState state = p.scaler ? p.scaler->state() : optim::rule::ScalerState{};
    const optim::rule::Decision d =
        optim::rule::decide(g.norm, g.overflow, p.max_gradient_norm, p.scaler ? &p.scaler->rule() : nullptr, &state);
    if (p.scaler) p.scaler->set_state(state);
    if (!d.apply) {
      out.applied = false;
      return out;
    }
    factor = d.factor;
  }
  s.apply(factor);
  return out;
}

}  // namespace fastnn::runner
