#include "trainer/inference/predict.h"

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/progress.h"

namespace fastnn::inference {
namespace {

std::string prob(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", p);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

const std::string* name_of(int id, const std::vector<std::string>& names) {
  return id >= 0 && static_cast<size_t>(id) < names.size() ? &names[static_cast<size_t>(id)] : nullptr;
}

}  // namespace

PredictFormat parse_predict_format(const std::string& name) {
  if (name == "jsonl" || name == "json") return PredictFormat::kJsonl;
  if (name == "csv") return PredictFormat::kCsv;
  throw ConfigError(str("--format \"", name, "\" is not one of: jsonl, csv"));
}

std::string prediction_json_fields(const Prediction& p, const std::vector<std::string>& names) {
  std::string s = "\"label\":" + std::to_string(p.label());
  if (const std::string* n = name_of(p.label(), names))
    s += ",\"name\":" + nlohmann::json(*n).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  s += ",\"topk\":[";
  for (size_t i = 0; i < p.topk.size(); ++i) {
    if (i) s += ',';
    s += '[' + std::to_string(p.topk[i].first) + ',' + prob(p.topk[i].second) + ']';
  }
  return s + ']';
}

std::string prediction_json(const Prediction& p, const std::vector<std::string>& names) {
  // Built by hand to keep the key order stable and the probabilities at full precision.
  std::string s = "{\"source\":" + nlohmann::json(p.path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (p.record >= 0) s += ",\"record\":" + std::to_string(p.record) + ",\"target\":" + std::to_string(p.target);
  if (p.line >= 0) s += ",\"line\":" + std::to_string(p.line) + ",\"target\":" + std::to_string(p.target);
  return s + ',' + prediction_json_fields(p, names) + '}';
}

std::string csv_header() { return "source,record,target,label,name,topk"; }

std::string prediction_csv(const Prediction& p, const std::vector<std::string>& names) {
  std::string s = csv_field(p.path) + ',';
  if (p.record >= 0) s += std::to_string(p.record) + ',' + std::to_string(p.target);
  else if (p.line >= 0) s += std::to_string(p.line) + ',' + std::to_string(p.target);
  else s += ',';
  s += ',' + std::to_string(p.label()) + ',';
  if (const std::string* n = name_of(p.label(), names)) s += csv_field(*n);
  s += ',';
  for (size_t i = 0; i < p.topk.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(p.topk[i].first) + ':' + prob(p.topk[i].second);
  }
  return s;
}

PredictSummary run_predict(Predictor& predictor, const std::vector<PredictInput>& inputs, const PredictRunOptions& o,
                           const std::function<void(const std::string&)>& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string>& names = predictor.model().class_names;
  Progress progress("predict", known_total(inputs), "inputs");
  progress.set_silent(!o.progress);
  PredictSummary sum;
  Predictor::BadInput on_bad;
  if (o.skip_bad) {
    on_bad = [&sum](const InputItem& it, const std::string& why) {
      if (it.line >= 0) std::fprintf(stderr, "fastnn: skipping %s:%lld: %s\n", it.path.c_str(), static_cast<long long>(it.line), why.c_str());
      else if (it.record < 0) std::fprintf(stderr, "fastnn: skipping %s: %s\n", it.path.c_str(), why.c_str());
      else std::fprintf(stderr, "fastnn: skipping %s: record %lld: %s\n", it.path.c_str(), static_cast<long long>(it.record), why.c_str());
      ++sum.skipped;
    };
  }
  if (o.format == PredictFormat::kCsv) sink(csv_header());
  InputStream stream(inputs);
  const size_t batch = static_cast<size_t>(predictor.batch_size());
  std::vector<InputItem> items(batch);
  for (bool more = true; more;) {
    size_t n = 0;
    while (n < batch && (more = stream.next(&items[n]))) ++n;
    if (n == 0) break;
    for (const Prediction& p : predictor.classify(std::span<const InputItem>(items.data(), n), on_bad)) {
      sink(o.format == PredictFormat::kCsv ? prediction_csv(p, names) : prediction_json(p, names));
      if (o.on_prediction) o.on_prediction(p);
      ++sum.predicted;
    }
    progress.add(n);
  }
  progress.finish();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

}  // namespace fastnn::inference
