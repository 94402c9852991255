// The optimizer of one [rows, len] f32 parameter on the GPU whose update may touch only some rows: a
// sharded classifier head's class rows (docs/LARGE_SCALE.md), every row or PartialFC's sampled ones —
// the lazy update: rows not selected keep their weights and their slots, as Optimizer::step_rows does on
// the CPU. CUDA builds only (device_row_optimizer_cuda.cpp).
//
//   DeviceRowOptimizer rows(options, "Head/weights", weights, rows, emb_dim);
//   backbone.set_extra_statistics(rows.totals());
//   each step, on one stream:  backbone.prepare(s);  rows.prepare(sel, count, grad, wd, stats, backbone.control(), s);
//                              [allreduce rows.totals() over the ranks];  backbone.decide(lr, s);
//                              backbone.apply(s);  rows.apply(sel, count, grad, backbone.control(), s);
//
// The step's decision (skip under dynamic loss scaling, the clipping factor, lr and adam's lr_t and beta
// powers) is the backbone DeviceOptimizer's, read from its StepControl, so the rows and the backbone are
// one update in update_order.h's order; the rows add their gradient statistics to that decision through
// totals(). Each element goes through update_rules.h's rule for options.optimizer (rule_dispatch.h).
// Slots are named "<name>/<slot>" (the CPU optimizer's names for a parameter called `name`) and start at
// the CPU's initial values; f32 [rows * len] device tensors.
//
// `selected`: device memory, `count` ascending row indices (null: every row, count = rows); `grad`: their
// gradients, compact ([count, len], device), prepared in place: times 1 / loss scale, plus weight_decay ×
// the row's weights; with `stats` the sum of squares and non-finite count go to totals() (else zeros).
// Pointers are device addresses the caller keeps alive; stream: a cudaStream_t (as void*).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/optim/optimizers.h"
#include "trainer/tensor.h"

namespace fastnn {

class DeviceRowOptimizer {
 public:
  struct Slot {
    std::string name;  // "<name>/<slot>"
    Tensor data;       // f32 [rows * len], device
  };

  DeviceRowOptimizer(const OptimizerOptions& options, std::string name, float* master, int64_t rows, int64_t len);
  DeviceRowOptimizer(const DeviceRowOptimizer&) = delete;
  DeviceRowOptimizer& operator=(const DeviceRowOptimizer&) = delete;

  void prepare(const int64_t* selected, int64_t count, float* grad, float weight_decay, bool stats, const void* control,
               void* stream);
  // Two device doubles: the last prepare()'s sum of squares and non-finite count; stays in place.
  double* totals() { return static_cast<double*>(totals_.raw()); }
  void apply(const int64_t* selected, int64_t count, const float* grad, const void* control, void* stream);

  const std::vector<Slot>& slots() const { return slots_; }

 private:
  OptimizerOptions o_;
  float* master_;
  int64_t rows_, len_;
  std::vector<Slot> slots_;
  Tensor partials_, totals_;
};

}  // namespace fastnn
