// Labelled inputs against the model's classes (`fastnn predict`): a shard folder or TFRecord file
// whose folder carries a class map (manifest.json, labels.txt: core/class_map.h) must carry the
// model's, or the predictions' `target` and `name` fields would pair one class's id with another's
// name. Refused with a ConfigError naming the folder and the first difference. Image files and
// base64-TSV lines carry no class map and pass; so does everything when the model has no class names.
#pragma once

#include <vector>

#include "trainer/inference/predict_inputs.h"
#include "trainer/inference/predictor.h"

namespace fastnn::inference {

void check_input_classes(const std::vector<PredictInput>& inputs, const ModelInfo& model);

}  // namespace fastnn::inference
