#include "trainer/loop/evaluate.h"

#include "trainer/loop/batch_tensors.h"

#include <chrono>
#include <cstring>

#include "core/check.h"

namespace fastnn::loop {

EvalResult evaluate_dataset(graph::Graph& g, const EvalBatchFn& evaluate_batch, const pipeline::Dataset& ds) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t train_batch = g.batch_size();
  EvalResult r;
  double loss_sum = 0;
  int64_t top1 = 0, top5 = 0;
  auto it = ds.make_iterator();
  for (pipeline::BatchHandle b; it->next(&b);) {
    if (b->size() != g.batch_size()) g.set_batch_size(b->size());
    const BatchTensors t = wrap_batch(std::move(b));  // the batch's own buffer, no copy
    const StepResult s = evaluate_batch(t.images, t.labels);
    loss_sum += s.main_loss * static_cast<double>(s.examples);
    top1 += s.correct;
    top5 += s.correct_top5;
    r.num_examples += s.examples;
  }
  if (g.batch_size() != train_batch) g.set_batch_size(train_batch);
  if (r.num_examples > 0) {
    const double n = static_cast<double>(r.num_examples);
    r.top1 = static_cast<double>(top1) / n;
    r.top5 = static_cast<double>(top5) / n;
    r.loss = loss_sum / n;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace fastnn::loop
