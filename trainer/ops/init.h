// Parameter / state initialisation (CPU tensors, f32 or f64).
//
// From a TensorSpec's Init tag (what a kernel's signature asks for by default):
//   kZeros, kOnes: constants. kHeNormal: N(0, 2 / fan_in). kGlorotUniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
// From an InitRule (what a layer graph asks for explicitly, schemas/net.proto's InitSpec):
//   kConstant value; kUniform U(low, high); kNormal N(mean, stddev^2); kTruncatedNormal N(mean, stddev^2)
//   with draws beyond 2 stddev redrawn (TensorFlow's truncated_normal); kHeNormal and kGlorotUniform as
//   above; kVarianceScaling TF 1.x variance_scaling_initializer: n = fan_in / fan_out / their mean,
//   uniform: U(-sqrt(3 factor / n), sqrt(3 factor / n)), else truncated normal with
//   stddev sqrt(1.3 factor / n) (the 1.3 undoes the truncation's shrinkage).
// Random draws are Philox (ops/random.h) keyed by `seed` with the element index as counter (InitRule:
// two elements per block; truncated-normal redraws use further streams), so a tensor's values depend
// only on (seed, rule, fans), not on threads.
// kNone leaves the tensor unchanged.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void init_tensor(Tensor& t, const TensorSpec& spec, uint64_t seed);

struct InitRule {
  enum class Kind : uint8_t {
    kZeros, kConstant, kUniform, kNormal, kTruncatedNormal, kHeNormal, kGlorotUniform, kVarianceScaling
  };
  enum class Mode : uint8_t { kFanIn, kFanOut, kFanAvg };
  Kind kind = Kind::kZeros;
  double value = 0;                // kConstant
  double low = -0.05, high = 0.05;  // kUniform
  double mean = 0, stddev = 1;     // kNormal, kTruncatedNormal
  double factor = 2;               // kVarianceScaling
  Mode mode = Mode::kFanIn;
  bool uniform = false;
};

// Throws Error for a non-CPU or non-f32/f64 tensor, ConfigError for a nonsensical rule (stddev < 0,
// low > high, a fan-based rule with a zero fan).
void init_tensor(Tensor& t, const InitRule& rule, int64_t fan_in, int64_t fan_out, uint64_t seed);

}  // namespace fastnn::ops
