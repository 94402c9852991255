#include "trainer/optim/loss_scaler.h"

#include <cmath>

#include "core/check.h"

namespace fastnn {

LossScaler::LossScaler(const LossScalerOptions& o)
    : rule_{.dynamic = o.dynamic, .growth_interval = o.growth_interval, .min_scale = o.min_scale,
            .max_scale = o.max_scale},
      state_{.scale = o.initial_scale} {
  if (!(std::isfinite(o.initial_scale) && o.initial_scale > 0))
    throw ConfigError(str("loss_scale must be a finite number > 0, got ", o.initial_scale));
  if (o.growth_interval < 1) throw ConfigError(str("loss_scale_window must be >= 1, got ", o.growth_interval));
  if (!(o.min_scale > 0 && o.min_scale <= o.max_scale))
    throw ConfigError(str("loss scaler: need 0 < min_scale <= max_scale, got ", o.min_scale, ", ", o.max_scale));
}

bool LossScaler::update(bool overflow) { return rule_.record(state_, overflow); }

void LossScaler::restore(double scale, int64_t clean_steps) {
  FASTNN_CHECK(std::isfinite(scale) && scale > 0 && clean_steps >= 0, "loss scaler: bad saved state (scale ", scale,
               ", clean steps ", clean_steps, ")");
  state_.scale = scale;
  state_.clean = clean_steps;
}

}  // namespace fastnn
