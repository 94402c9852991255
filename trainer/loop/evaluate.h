// Evaluation over a whole held-out split: top-1, top-5 and mean loss of the main head, in eval mode
// (moving BN statistics, no dropout). The last, smaller batch is evaluated at its own size (the
// graph is re-planned for it and set back afterwards), so every example counts exactly once.
// With `logits` (the batch's logits on the host, StepRunner::host_logits) and at most
// kMaxConfusionClasses classes, also the confusion matrix: confusion[true * classes + predicted]
// examples, predicted = the arg-max of the logits (the lowest index among equal maxima); its trace
// over num_examples is top-1 up to ties. Skipped (empty) when the logits are undefined or not [N, C].
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pipeline/dataset.h"
#include "trainer/metrics/jsonl_writer.h"  // kMaxConfusionClasses
#include "trainer/train_step.h"

namespace fastnn {
class Progress;
}  // namespace fastnn

namespace fastnn::loop {

struct EvalResult {
  double top1 = 0, top5 = 0, loss = 0;
  int64_t num_examples = 0;
  double seconds = 0;
  int64_t confusion_classes = 0;   // 0: no confusion matrix
  std::vector<int64_t> confusion;  // row-major [true][predicted]
  // With per-class logits: the most confident mistakes (at most kMaxMisclassified, most confident first;
  // equal confidences by file, then record), each found again by its shard file and record.
  std::vector<MisclassifiedImage> misclassified;
};

// `evaluate_batch` evaluates one batch of `graph` (a StepRunner's evaluate, on any device).
using EvalBatchFn = std::function<StepResult(const Tensor& images, const Tensor& labels)>;
using EvalLogitsFn = std::function<Tensor()>;
// `progress` (optional) counts the images as they are evaluated (`fastnn eval`'s progress line).
EvalResult evaluate_dataset(graph::Graph& graph, const EvalBatchFn& evaluate_batch, const pipeline::Dataset& dataset,
                            const EvalLogitsFn& logits = {}, Progress* progress = nullptr);

// Adds one batch's predictions to r's confusion matrix (sized on first use from the logits' width).
// false (and nothing counted) when the logits are not [labels, C] with C <= kMaxConfusionClasses.
bool count_confusion(const Tensor& logits, const Tensor& labels, EvalResult* r);

// Adds one batch's wrong predictions (arg-max of the logits against the labels) to r's most confident
// mistakes; sources[i] is sample i's record, an index into `files` (a cached record, which has no file,
// is passed over). Nothing when the logits are not [labels, C].
void note_misclassified(const Tensor& logits, const Tensor& labels, std::span<const pipeline::SampleSource> sources,
                        const pipeline::FileList& files, EvalResult* r);

// A shard's path as MisclassifiedImage::file holds it: absolute, so that `fastnn report` finds the shard
// from any directory.
std::string misclassified_file(const std::string& shard_path);

// Keeps the kMaxMisclassified most confident of `images`, most confident first (ties: file, record).
void keep_most_confident(std::vector<MisclassifiedImage>* images);

// The evaluation metrics.jsonl recorded at `step` (its last such line), for a rerun that trains nothing;
// nullopt when there is none or the file cannot be read (no failure: the rerun still reports).
std::optional<EvalResult> recorded_eval(const std::string& metrics_jsonl, int64_t step);

}  // namespace fastnn::loop
