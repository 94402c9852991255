#include "trainer/serve/answers.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "trainer/inference/predict.h"

namespace fastnn::serve {

std::string classify_json(std::span<const Outcome> outcomes, const std::vector<std::string>& names) {
  std::string s = "{\"predictions\":[";
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (i) s += ',';
    s += "{\"source\":" + std::to_string(i) + ',' + inference::prediction_json_fields(outcomes[i].prediction, names) + '}';
  }
  return s + "]}";
}

std::string embed_json(std::span<const Outcome> outcomes) {
  std::string s = "{\"instance\":[";
  char buf[32];
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (i) s += ',';
    s += "{\"embedding\":[";
    const std::vector<float>& e = outcomes[i].prediction.embedding;
    for (size_t k = 0; k < e.size(); ++k) {
      if (k) s += ',';
      // Shortest text that reads back as the same float32.
      const auto r = std::to_chars(buf, buf + sizeof buf, e[k]);
      s.append(buf, r.ptr);
    }
    s += "]}";
  }
  return s + "]}";
}

std::string model_json(const inference::ModelInfo& m, const BatcherOptions& b) {
  nlohmann::json j;
  j["model_name"] = m.model_name;
  j["checkpoint"] = m.checkpoint;
  j["step"] = m.step;
  j["num_classes"] = m.num_classes;
  j["class_names"] = m.class_names;
  j["device"] = m.device;
  j["input"] = {{"height", m.height},
                {"width", m.width},
                {"channels", m.channels},
                {"layout", m.input_layout},
                {"preprocessing", m.preset},
                {"content_types", {"image/jpeg", "image/png", "application/octet-stream", "application/json"}}};
  j["embedding"] = {{"layer", m.embedding_layer}, {"size", m.embedding_size}};
  j["batching"] = {{"max_batch", b.max_batch},
                   {"forward_batch", std::min(m.forward_batch, b.max_batch)},
                   {"max_delay_ms", static_cast<double>(b.max_delay.count()) / 1000.0},
                   {"queue", b.queue_capacity}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string error_json(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace fastnn::serve
