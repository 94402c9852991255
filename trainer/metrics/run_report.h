// The picture page of `fastnn report RUN_DIR`: one self-contained HTML file (core/report/) drawn from
// the run's metrics.jsonl (jsonl_writer.h's lines, read back).
//
// read_run_metrics(): every line that is a JSON object with an integer step; "train" lines give the
// loss, accuracy, learning-rate and throughput series (null, i.e. NaN or infinite, stays NaN and is not
// drawn), "eval" lines the held-out top-1/top-5/loss; a line that is not such an object (a torn last
// line of a killed run) is counted in `skipped`, not fatal. The last eval line that has a
// confusion_matrix (square, at most kMaxConfusionClasses rows of non-negative integers; anything else
// is ignored with a warning) gives the confusion matrix and per-class accuracy; the last eval line's
// "misclassified" the gallery (an entry that is not {file, record, offset, label, predicted,
// confidence} is ignored with a warning).
//
// run_report_page(): sections "curves" (loss, accuracy, learning rate, throughput against the step),
// "confusion" (the matrix as a heat map with the true class in rows, and each class's accuracy =
// diagonal / row sum, as a table and a bar chart), "misclassified" (the last evaluation's most confident
// mistakes, each image read back from its shard record, record_image.h; one that cannot be read is
// named with the reason instead) and "notes"; every number is also in the page's
// JSON block (`<script type="application/json" id="data">`, docs/REPORTS.md). Class names come from
// `class_names` (labels.txt of the run's dataset; numbers where missing).
// Errors: IoError when metrics.jsonl cannot be read; ConfigError when it holds no metrics line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/metrics/jsonl_writer.h"  // MisclassifiedImage

namespace fastnn {

struct RunMetrics {
  std::vector<double> train_step, loss, accuracy, lr, images_per_sec;
  struct Eval {
    int64_t step = 0;
    std::string split;
    double top1 = 0, top5 = 0, loss = 0;
    int64_t num_examples = 0;
  };
  std::vector<Eval> evals;
  std::vector<Eval> moving_average_evals;  // "eval_moving_averages" lines (moving_average_decay)
  // The last eval line with a usable confusion matrix (classes 0: none).
  int64_t confusion_step = 0, confusion_classes = 0;
  std::vector<int64_t> confusion;  // row-major [true][predicted]
  // The last eval line's "misclassified" (its most confident mistakes; none: empty).
  int64_t misclassified_step = 0;
  std::vector<MisclassifiedImage> misclassified;
  int64_t skipped = 0;             // lines that were not metrics objects
  std::vector<std::string> warnings;
};

RunMetrics read_run_metrics(const std::string& path);

struct RunReportInfo {
  std::string run_dir, model_name, dataset_dir;
  std::vector<std::string> class_names;
  std::vector<std::string> notes;  // shown as given (escaped)
};

std::string run_report_page(const RunMetrics& metrics, const RunReportInfo& info);

}  // namespace fastnn
