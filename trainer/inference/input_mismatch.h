// A warning, said once per command, when an input image is far from what the model takes, which
// nothing else would say: the answers on such an input mean little (a Fashion-MNIST LeNet calls a
// photograph of a building "Shirt"). Far is
//   - a colour image into a model of one channel (the preprocessing makes it gray);
//   - under a preset that does not resize (lenet, cifarnet), a side over twice the model's: the model
//     sees only a central crop of it;
//   - under a preset that resizes (inception, vgg), a side under half the model's: it is blown up.
// The same thresholds as training's input-geometry warning (trainer/loop/input_geometry.h).
#pragma once

#include <string>

#include "trainer/inference/predict_inputs.h"
#include "trainer/inference/predictor.h"

namespace fastnn::inference {

// "" when the item's image suits the model, or has no image/encoded, or cannot be read (classify
// reports an unreadable image itself). `name` names the input in the warning (default: its path, record
// or line).
std::string input_mismatch_warning(const InputItem& item, const ModelInfo& model, const std::string& name = {});

}  // namespace fastnn::inference
