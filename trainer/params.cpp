#include "trainer/params.h"

namespace fastnn {

bool default_weight_decay_for_name(std::string_view name) {
  for (std::string_view excluded : {"LayerNorm", "layer_norm", "bias", "BatchNorm", "batch_norm"}) {
    if (name.find(excluded) != std::string_view::npos) return false;
  }
  return true;
}

}  // namespace fastnn
