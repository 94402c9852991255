#include "trainer/schedule/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"
#include "schemas/job_config.pb.h"

namespace fastnn {

double LrSchedule::warmup_multiplier(int64_t step) const {
  if (step >= warmup_steps) return 1.0;
  const double w = static_cast<double>(warmup_steps);
  switch (warmup_scheme) {
    case LrWarmupScheme::kT2T: return std::exp(std::log(0.01) * (w - static_cast<double>(step)) / w);
    case LrWarmupScheme::kLinear: return (static_cast<double>(step) + 1.0) / w;
    case LrWarmupScheme::kNone: return 1.0;
  }
  return 1.0;
}

double LrSchedule::lr_at(int64_t step) const {
  FASTNN_CHECK(step >= 0, "learning rate asked for negative step ", step);
  if (decay_type == LrDecayType::kFixed) return learning_rate;
  const double r = learning_rate * warmup_multiplier(step);
  switch (decay_type) {
    case LrDecayType::kExponential: {
      if (!decays || step < start_decay_step) return r;
      const int64_t k = (step - start_decay_step) / decay_steps;
      return r * std::pow(decay_factor, static_cast<double>(k));
    }
    case LrDecayType::kPolynomial: {
      if (!decays || step < start_decay_step) return r;
      const double p = static_cast<double>(std::min(step - start_decay_step, decay_steps)) /
                       static_cast<double>(decay_steps);
      return (r - end_learning_rate) * std::pow(1.0 - p, polynomial_power) + end_learning_rate;
    }
    case LrDecayType::kCosine: {
      const double span = static_cast<double>(stop_at_step - warmup_steps);
      const double t = std::min(static_cast<double>(step - warmup_steps), span);
      const double c = 0.5 * (1.0 + std::cos(std::numbers::pi * t / span));
      return r * ((1.0 - min_lr_ratio) * c + min_lr_ratio);
    }
    case LrDecayType::kPiecewise: {
      const size_t i = static_cast<size_t>(
          std::lower_bound(boundaries.begin(), boundaries.end(), step) - boundaries.begin());
      return values[i] * warmup_multiplier(step);
    }
    case LrDecayType::kFixed: break;
  }
  return learning_rate;
}

std::string LrSchedule::describe() const {
  static const char* const kTypes[] = {"fixed", "exponential", "polynomial", "cosine", "piecewise"};
  std::string s = str(kTypes[static_cast<int>(decay_type)], " from ", learning_rate);
  if (decay_type == LrDecayType::kFixed) return s;
  if (warmup_steps > 0 && warmup_scheme != LrWarmupScheme::kNone) {
    s += str(", ", warmup_scheme == LrWarmupScheme::kT2T ? "t2t" : "linear", " warmup ", warmup_steps, " steps");
  }
  switch (decay_type) {
    case LrDecayType::kExponential:
      s += decays ? str(", decay x", decay_factor, " every ", decay_steps, " steps from step ", start_decay_step)
                  : std::string(", no decay");
      break;
    case LrDecayType::kPolynomial:
      s += decays ? str(", ", polynomial_power == 1.0 ? std::string("linear") : str("power-", polynomial_power),
                        " decay to ", end_learning_rate, " over ", decay_steps, " steps from step ", start_decay_step)
                  : std::string(", no decay");
      break;
    case LrDecayType::kCosine:
      s += str(", cosine to ", min_lr_ratio, "x over steps ", warmup_steps, "..", stop_at_step);
      break;
    case LrDecayType::kPiecewise:
      s += str(", ", values.size(), " pieces");
      break;
    case LrDecayType::kFixed: break;
  }
  return s;
}

namespace {

LrDecayType parse_decay_type(const std::string& s) {
  if (s == "fixed") return LrDecayType::kFixed;
  if (s == "exponential") return LrDecayType::kExponential;
  if (s == "polynomial") return LrDecayType::kPolynomial;
  if (s == "cosine") return LrDecayType::kCosine;
  if (s == "piecewise") return LrDecayType::kPiecewise;
  throw ConfigError(str("learning_rate_decay_type \"", s,
                        "\" is not one of: fixed, exponential, polynomial, cosine, piecewise"));
}

LrWarmupScheme parse_warmup(const std::string& s) {
  if (s == "t2t") return LrWarmupScheme::kT2T;
  if (s == "linear") return LrWarmupScheme::kLinear;
  if (s == "none") return LrWarmupScheme::kNone;
  throw ConfigError(str("warmup_scheme \"", s, "\" is not one of: t2t, linear, none"));
}

}  // namespace

LrSchedule make_lr_schedule(const JobConfig& c, int64_t num_samples_per_epoch, int64_t global_batch_size) {
  LrSchedule s;
  s.learning_rate = c.learning_rate();
  s.decay_type = parse_decay_type(c.learning_rate_decay_type());
  s.warmup_scheme = parse_warmup(c.warmup_scheme());
  s.warmup_steps = c.warmup_steps();
  s.decay_factor = c.learning_rate_decay_factor();
  s.end_learning_rate = c.end_learning_rate();
  s.polynomial_power = c.polynomial_decay_power();
  s.stop_at_step = c.stop_at_step();
  s.min_lr_ratio = c.min_lr_ratio();
  if (s.warmup_steps < 0) throw ConfigError(str("warmup_steps must be >= 0, got ", s.warmup_steps));
  if (s.warmup_steps == 0) s.warmup_scheme = LrWarmupScheme::kNone;

  const int64_t S = c.stop_at_step();
  const std::string& scheme = c.decay_scheme();
  int64_t times = 0;
  if (scheme == "luong234") {
    s.start_decay_step = 2 * S / 3;
    times = 4;
  } else if (scheme == "luong5" || scheme == "luong10") {
    s.start_decay_step = S / 2;
    times = scheme == "luong5" ? 5 : 10;
  } else if (scheme == "epochs") {
    if (num_samples_per_epoch <= 0 || global_batch_size <= 0) {
      throw ConfigError(str("decay_scheme epochs needs num_sample_per_epoch and batch size > 0, got ",
                            num_samples_per_epoch, " and ", global_batch_size));
    }
    s.start_decay_step = 0;
    s.decay_steps = static_cast<int64_t>(static_cast<double>(num_samples_per_epoch) *
                                         c.num_epochs_per_decay() / static_cast<double>(global_batch_size));
  } else if (scheme == "after_warmup") {
    s.start_decay_step = s.warmup_steps;
    s.decay_steps = S - s.warmup_steps;
  } else if (scheme.empty()) {
    s.start_decay_step = S;
  } else {
    throw ConfigError(
        str("decay_scheme \"", scheme, "\" is not one of: \"\", luong234, luong5, luong10, epochs, after_warmup"));
  }
  if (times > 0) s.decay_steps = (S - s.start_decay_step) / times;
  s.decays = !scheme.empty();

  const bool uses_scheme = s.decay_type == LrDecayType::kExponential || s.decay_type == LrDecayType::kPolynomial;
  if (uses_scheme && s.decays && s.decay_steps <= 0) {
    if (scheme == "after_warmup")
      throw ConfigError(str("decay_scheme after_warmup needs stop_at_step (", S, ") > warmup_steps (", s.warmup_steps,
                            "): it decays from the end of warmup to stop_at_step"));
    throw ConfigError(str("decay_scheme ", scheme, " gives a decay interval of 0 steps (stop_at_step ", S,
                          scheme == "epochs" ? ", num_epochs_per_decay too small for the epoch" : "",
                          "); raise stop_at_step or num_epochs_per_decay"));
  }
  if (s.decay_type == LrDecayType::kCosine) {
    if (S <= s.warmup_steps) {
      throw ConfigError(str("cosine decay needs stop_at_step (", S, ") > warmup_steps (", s.warmup_steps, ")"));
    }
  }
  if (s.decay_type == LrDecayType::kPiecewise) {
    s.boundaries.assign(c.lr_boundaries().begin(), c.lr_boundaries().end());
    s.values.assign(c.lr_values().begin(), c.lr_values().end());
    if (s.values.size() != s.boundaries.size() + 1) {
      throw ConfigError(str("piecewise learning rate needs one more lr_values (", s.values.size(),
                            ") than lr_boundaries (", s.boundaries.size(), ")"));
    }
    for (size_t i = 1; i < s.boundaries.size(); ++i) {
      if (s.boundaries[i] <= s.boundaries[i - 1]) {
        throw ConfigError(str("lr_boundaries must increase: ", s.boundaries[i - 1], " then ", s.boundaries[i]));
      }
    }
  }
  return s;
}

}  // namespace fastnn
