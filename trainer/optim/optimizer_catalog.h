// Every optimizer fastnn knows, said once: its FastNN config name, whether weight_decay is part of its
// own formula, whether the CUDA update kernels run it, and the state it keeps per parameter (its slots,
// in order, with their initial values). The CPU optimizers (optimizers.h) register exactly these slots
// (optim_catalog_test holds each of them to it), the device optimizers allocate them
// (device_optimizer.h, device_row_optimizer.h) and the memory estimate counts them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainer/optim/optimizers.h"

namespace fastnn::optim {

struct OptimizerTraits {
  std::string_view name;  // the FastNN config name
  // weight_decay is in the update itself (AdamW's decoupled decay, LARS, LAMB), not an L2 term added
  // to the gradient before it.
  bool decays_itself;
  // The CUDA update kernels run it (update_kernels.h); adamw's per-step bias corrections and lars's and
  // lamb's per-parameter norms are computed by the CPU optimizers only so far.
  bool on_device;
};

// FastNN's order.
const std::vector<OptimizerTraits>& optimizer_catalog();

// The optimizer named `name`; ConfigError listing the valid names for an unknown one.
const OptimizerTraits& optimizer_traits(std::string_view name);

struct SlotInit {
  std::string name;  // "<param>/<name>" in the state
  float init;
};

// The slots options.optimizer keeps for each parameter, in the order it registers them, with their
// initial values (adagrad's and ftrl's accumulators start at the options' values). ConfigError for an
// unknown name.
std::vector<SlotInit> slot_inits(const OptimizerOptions& options);

}  // namespace fastnn::optim
