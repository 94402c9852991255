// `fastnn predict` without the command line: inputs (predict_inputs.h) → batches → a Predictor
// (predictor.h) → one line per input, in input order, handed to a sink.
//
// Lines (docs/INFERENCE.md):
//   jsonl  {"source":PATH,["record":I,"target":T,|"line":L,"target":T,]"label":ID,["name":NAME,]"topk":[[ID,P],...]}
//          record/target only for TFRecord inputs, line/target only for base64-TSV lines, name only when
//          the model has class names.
//   csv    header "source,record,target,label,name,topk", then one row per input; record/target empty for
//          images, record the line number for base64-TSV, topk as "id:p id:p ..."; fields quoted RFC 4180
//          style when they need it.
// Probabilities are printed with 9 significant digits (%.9g).
// Bad inputs: with skip_bad each is reported on stderr ("fastnn: skipping PATH[: record I]: why") and
// counted; without, the first one throws FormatError naming it. Progress (core/progress.h) on stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainer/inference/predictor.h"

namespace fastnn::inference {

enum class PredictFormat { kJsonl, kCsv };
PredictFormat parse_predict_format(const std::string& name);  // jsonl|json|csv; ConfigError otherwise

std::string prediction_json(const Prediction& p, const std::vector<std::string>& class_names);
// The fields after source/record/target: "label":ID[,"name":NAME],"topk":[...] (no braces; serve's answers).
std::string prediction_json_fields(const Prediction& p, const std::vector<std::string>& class_names);
std::string csv_header();
std::string prediction_csv(const Prediction& p, const std::vector<std::string>& class_names);

struct PredictRunOptions {
  PredictFormat format = PredictFormat::kJsonl;
  bool skip_bad = false;
  bool progress = true;
  // Called with each prediction after its line (in input order): `--embeddings` writes them here.
  std::function<void(const Prediction&)> on_prediction;
};

struct PredictSummary {
  int64_t predicted = 0, skipped = 0;
  double seconds = 0;
};

// Each line (without its newline) goes to `sink`, the CSV header first.
PredictSummary run_predict(Predictor& predictor, const std::vector<PredictInput>& inputs, const PredictRunOptions& options,
                           const std::function<void(const std::string& line)>& sink);

}  // namespace fastnn::inference
