// The vocabulary shared by the layer graph, the optimizers, the gradient communicators and checkpoints:
// a parameter as plain float buffers (ParamRef) and an owned named float array (NamedArray, what an
// optimizer's state is saved as). It sits at the tensor level, below all of them, so that none of them
// includes another for it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn {

struct ParamRef {
  std::string name;        // unique; slot state is named after it
  float* value = nullptr;  // `count` floats, updated in place by Optimizer::step
  float* grad = nullptr;   // `count` floats; step() reads it, add_weight_decay/clip_by_global_norm edit it
  size_t count = 0;
  // Weight decay applies to this parameter: both the L2 term of add_weight_decay and adamweightdecay's
  // decoupled decay. Layers set it false for biases and batch/layer-norm parameters (see
  // default_weight_decay_for_name for the name-based rule FastNN uses).
  bool decay = true;
};

// FastNN/BERT's exclusion rule by name: false when the name contains "LayerNorm", "layer_norm" or "bias"
// (FastNN), or "BatchNorm" / "batch_norm" (fastnn: batch-norm parameters are excluded too).
bool default_weight_decay_for_name(std::string_view name);

// An owned copy of one float array under a name (optimizer state in checkpoint I/O).
struct NamedArray {
  std::string name;
  std::vector<float> data;
};

}  // namespace fastnn
