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
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/comm/communicator.h"
#include "trainer/inference/predictor.h"

namespace fastnn::inference {

enum class PredictFormat { kJsonl, kCsv };
PredictFormat parse_predict_format(const std::string& name);  // jsonl|json|csv; UsageError otherwise
// The format of predict's output: `format` (--format, empty when not given) and the extension of `output`
// (-o, empty: stdout) must agree. .csv is csv; .jsonl, .json, .ndjson are jsonl; without --format a
// name with another extension is refused (UsageError) rather than written in a format it does not say.
PredictFormat predict_output_format(const std::string& format, const std::string& output);

std::string prediction_json(const Prediction& p, const std::vector<std::string>& class_names);
// The fields after source/record/target: "label":ID[,"name":NAME],"topk":[...] (no braces; serve's answers).
std::string prediction_json_fields(const Prediction& p, const std::vector<std::string>& class_names);
std::string csv_header();
std::string prediction_csv(const Prediction& p, const std::vector<std::string>& class_names);

struct PredictRunOptions {
  PredictFormat format = PredictFormat::kJsonl;
  bool skip_bad = false;
  bool progress = true;
  // Called with each prediction's embedding after its line (in input order, on rank 0): `--embeddings`
  // writes them here. Set it to have the embeddings computed.
  std::function<void(std::span<const float> embedding)> on_embedding;
};

// Thrown alike on every rank of a split predict (a bad input without skip_bad, an unreadable input
// file): each rank can exit on its own, nobody waits in a collective.
class SplitPredictError : public Error {
 public:
  using Error::Error;
};

struct PredictSummary {
  int64_t predicted = 0, skipped = 0;
  double seconds = 0;
};

// Each line (without its newline) goes to `sink`, the CSV header first.
// Under mpirun (`comm` with more than one rank) every rank calls this with the same inputs: batch b is
// classified by rank b % world_size, results are gathered each round and only rank 0 calls `sink` and
// on_embedding, in input order; the summary's counts are the whole job's on every rank. An error on any
// rank (a bad input without skip_bad) ends every rank with SplitPredictError carrying its message, as
// does an error reading the inputs (every rank reads them all).
PredictSummary run_predict(Predictor& predictor, const std::vector<PredictInput>& inputs, const PredictRunOptions& options,
                           const std::function<void(const std::string& line)>& sink, Communicator* comm = nullptr);

}  // namespace fastnn::inference
