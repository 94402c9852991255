// Evaluation over a whole held-out split: top-1, top-5 and mean loss of the main head, in eval mode
// (moving BN statistics, no dropout). The last, smaller batch is evaluated at its own size (the
// graph is re-planned for it and set back afterwards), so every example counts exactly once.
#pragma once

#include <cstdint>
#include <functional>

#include "pipeline/dataset.h"
#include "trainer/train_step.h"

namespace fastnn::loop {

struct EvalResult {
  double top1 = 0, top5 = 0, loss = 0;
  int64_t num_examples = 0;
  double seconds = 0;
};

// `evaluate_batch` evaluates one batch of `graph` (a StepRunner's evaluate, on any device).
using EvalBatchFn = std::function<StepResult(const Tensor& images, const Tensor& labels)>;
EvalResult evaluate_dataset(graph::Graph& graph, const EvalBatchFn& evaluate_batch, const pipeline::Dataset& dataset);

}  // namespace fastnn::loop
