// The optimizer on the GPU (CUDA builds only; the implementation is device_optimizer_cuda.cpp): f32
// master weights and f32 slots in device memory, updated by the fused kernels of optim/update_kernels.h.
//
// All eight FastNN optimizers (sgd, momentum with Nesterov, adam, adamweightdecay, rmsprop, adagrad,
// adadelta, ftrl), with the CPU optimizers' rules, slot initial values and state names ("<param>/momentum",
// "<param>/adam_m", "<param>/adam_v", "adam/beta1_power", "adam/beta2_power", "<param>/rms",
// "<param>/accumulator", "<param>/accum", "<param>/accum_update", "<param>/linear"; see optimizers.h), so
// export_state()/import_state() interchange with Optimizer's (checkpoints written by a CPU run resume on
// the GPU and back). ftrl with a learning_rate_power other than -0.5 uses CUDA's powf and is close to, not
// bitwise, the CPU's; everything else is bitwise. An unknown name: ConfigError. ftrl's step() throws
// Error for lr <= 0, as the CPU's.
//
// Gradients are f32 device buffers prepared by the caller (unscaled and weight-decayed); step() multiplies
// them by `grad_scale` as it reads them (the global-norm clipping factor, 1 when not clipping), so with
// grad_scale 1 an update is bitwise the CPU's. Adam's beta powers live on the host (floats, as on the CPU)
// and its lr_t is computed there exactly as the CPU's begin_step does.
//
// Pointers are device addresses the caller keeps alive; stream: a cudaStream_t (as void*), nothing waits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/optim/optimizers.h"
#include "trainer/tensor.h"

namespace fastnn {

struct DeviceParam {
  std::string name;
  float* master = nullptr;       // f32, `count` elements, updated in place
  const float* grad = nullptr;   // f32, `count` elements
  int64_t count = 0;
  bool decay = true;             // adamweightdecay's decoupled decay applies
};

class DeviceOptimizer {
 public:
  DeviceOptimizer(const OptimizerOptions& options, std::vector<DeviceParam> params);
  static bool supports(const std::string& optimizer);

  const std::string& name() const { return name_; }
  void step(float lr, float grad_scale, void* stream);

  std::vector<NamedArray> export_state() const;  // copies to the host (waits for the current stream)
  void import_state(const std::vector<NamedArray>& arrays);  // FormatError as Optimizer::import_state

 private:
  struct Slot {
    std::string name;
    std::vector<Tensor> data;  // per parameter, f32 on the device
  };
  std::string name_;
  OptimizerOptions o_;
  std::vector<DeviceParam> params_;
  std::vector<Slot> slots_;
  float beta1_power_ = 0, beta2_power_ = 0;  // adam
};

}  // namespace fastnn
