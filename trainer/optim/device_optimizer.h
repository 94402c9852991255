// The optimizer on the GPU (CUDA builds only; the implementation is device_optimizer_cuda.cpp): f32
// master weights and f32 slots in device memory, updated by the chunk-table kernels of
// optim/update_kernels.h — three launches per step for every parameter together, each element through
// update_rules.h, the CPU optimizers' own rules.
//
// All eight FastNN optimizers (sgd, momentum with Nesterov, adam, adamweightdecay, rmsprop, adagrad,
// adadelta, ftrl), with the CPU optimizers' slot initial values and state names ("<param>/momentum",
// "<param>/adam_m", "<param>/adam_v", "adam/beta1_power", "adam/beta2_power", "<param>/rms",
// "<param>/accumulator", "<param>/accum", "<param>/accum_update", "<param>/linear"; see optimizers.h), so
// export_state()/import_state() interchange with Optimizer's (checkpoints written by a CPU run resume on
// the GPU and back). ftrl with a learning_rate_power other than -0.5 uses CUDA's powf and is close to, not
// bitwise, the CPU's; everything else is bitwise. An unknown name: ConfigError. ftrl's steps throw Error
// for lr <= 0, as the CPU's.
//
// Two ways to step:
//   step(lr, grad_scale)  the gradients are f32 and final; every element's gradient is multiplied by
//                         grad_scale as it is read (1: bitwise the CPU optimizer). Always applied.
//   prepare(); decide(lr); apply()   the training step's update in update_order.h's order with nothing
//                         read back: prepare turns each parameter's compute-dtype gradient (`source`) into
//                         the f32 `grad` (times 1 / loss scale, plus weight_decay * master) and takes the
//                         gradient statistics when clipping or loss scaling needs them; decide runs
//                         rule::decide on the device (loss-scaler state lives there); apply updates the
//                         masters and writes the compute-dtype `value` copies — or does nothing when the
//                         decision was to skip.
// read_back() waits for the stream and returns the last decision's numbers (norm, scaler state).
//
// Pointers are device addresses the caller keeps alive and in place; stream: a cudaStream_t (as void*).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/optim/optimizers.h"
#include "trainer/optim/update_rules.h"
#include "trainer/tensor.h"

namespace fastnn {

struct DeviceParam {
  std::string name;
  float* master = nullptr;       // f32, `count` elements, updated in place
  float* grad = nullptr;         // f32, `count` elements: what the update reads (prepare() writes it)
  int64_t count = 0;
  bool decay = true;             // adamweightdecay's decoupled decay applies
  const void* source = nullptr;  // the graph's gradient (compute dtype) prepare() reads; null: `grad` is final
  void* value = nullptr;         // the graph's weights (compute dtype) apply() refreshes; null: none (f32)
  float weight_decay = 0;        // prepare() adds weight_decay * master
  DType dtype = DType::kF32;     // of `source` and `value`: the compute dtype, or f32 for a parameter the
                                 // graph keeps in f32 under f16/bf16 (batch norm's); then value is null
};

struct DeviceStepOptions {
  DType compute = DType::kF32;   // the dtype of `source` and `value`
  double max_gradient_norm = 0;  // > 0: clipping by the global norm
  bool loss_scaling = false;     // f16: the scaler's rule decides (and unscales in prepare)
  optim::rule::ScalerRule scaler;
  optim::rule::ScalerState scaler_state;  // the initial state
};

struct DeviceStepReadback {
  double norm = 0;  // the last decision's global norm (0 when none was computed)
  bool applied = true;
  optim::rule::ScalerState scaler;
};

class DeviceOptimizer {
 public:
  DeviceOptimizer(const OptimizerOptions& options, std::vector<DeviceParam> params,
                  const DeviceStepOptions& step_options = {});
  ~DeviceOptimizer();
  DeviceOptimizer(const DeviceOptimizer&) = delete;
  DeviceOptimizer& operator=(const DeviceOptimizer&) = delete;
  static bool supports(const std::string& optimizer);

  const std::string& name() const { return name_; }
  void step(float lr, float grad_scale, void* stream);

  void prepare(void* stream);
  void decide(float lr, void* stream);
  // decide() for a step captured into a CUDA graph: the learning rate is read from `lr_on_device` (an
  // f32 in device memory the caller writes before each replay); check_learning_rate(lr) is decide()'s
  // host check of that value (ftrl needs lr > 0), for the caller to run every step.
  void decide(const float* lr_on_device, void* stream);
  void check_learning_rate(float lr) const;
  void apply(void* stream);

  DeviceStepReadback read_back() const;                            // waits for the device
  void set_scaler_state(const optim::rule::ScalerState& state);    // (restore) waits for the device
  // The device-resident StepControl (update_kernels.h): the loss gradient seed reads its scale; a
  // sharded classifier head's row update (device_row_optimizer.h) reads the step's decision from it.
  const void* control() const;
  // Two more gradient totals (sum of squares, non-finite count: device doubles, written before decide())
  // that the decision adds to the parameters' own: the rows of a sharded head, summed over the ranks,
  // so every rank clips and skips alike. Null: none. The caller keeps them alive and in place.
  void set_extra_statistics(const double* totals) { extra_statistics_ = totals; }

  std::vector<NamedArray> export_state() const;  // copies to the host (waits for the current stream)
  void import_state(const std::vector<NamedArray>& arrays);  // FormatError as Optimizer::import_state

 private:
  struct Slot {
    std::string name;
    std::vector<Tensor> data;  // per parameter, f32 on the device
  };
  struct Impl;
  void launch_update(void* stream);
  void launch_decide(float lr, const float* lr_on_device, void* stream);

  std::string name_;
  OptimizerOptions o_;
  DeviceStepOptions step_options_;
  std::vector<DeviceParam> params_;
  std::vector<Slot> slots_;
  std::unique_ptr<Impl> impl_;  // the chunk table, statistics scratch and step control on the device
  const double* extra_statistics_ = nullptr;
};

}  // namespace fastnn
