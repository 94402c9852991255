// The JSON bodies `fastnn serve` answers with (docs/INFERENCE.md, "Serving").
//   classify  {"predictions":[{"source":I,"label":ID[,"name":NAME],"topk":[[ID,P],...]}, ...]}
//             one object per image in request order, the fields of `fastnn predict`'s JSON lines
//             (inference::prediction_json_fields), `source` the image's index in the request;
//   embed     {"instance":[{"embedding":[F,...]}, ...]} (PaddlePaddle PLSC's answer), floats to 9
//             the shortest text that reads back as the same float32 (std::to_chars);
//   model     {"model_name", "checkpoint", "step", "num_classes", "class_names", "device",
//              "input": {"height","width","channels","layout","preprocessing","content_types"},
//              "embedding": {"layer","size"}, "batching": {"max_batch","forward_batch","max_delay_ms","queue"}};
//   error     {"error": MESSAGE}.
// Every outcome must be done without error (the server answers an error body otherwise).
#pragma once

#include <span>
#include <string>

#include "trainer/inference/predictor.h"
#include "trainer/serve/batcher.h"

namespace fastnn::serve {

std::string classify_json(std::span<const Outcome> outcomes, const std::vector<std::string>& class_names);
std::string embed_json(std::span<const Outcome> outcomes);
std::string model_json(const inference::ModelInfo& model, const BatcherOptions& batching);
std::string error_json(const std::string& message);

}  // namespace fastnn::serve
