#include "trainer/loop/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <tuple>
#include <cstring>

#include "core/check.h"
#include "core/progress.h"
#include "trainer/runner/batch_tensors.h"
#include "trainer/metrics/run_report.h"

namespace fastnn::loop {

namespace {
// The arg-max of one row of logits; the lowest index among equal maxima.
int64_t predicted_class(const float* row, int64_t classes) {
  int64_t best = 0;
  for (int64_t k = 1; k < classes; ++k)
    if (row[k] > row[best]) best = k;
  return best;
}
}  // namespace

bool count_confusion(const Tensor& logits, const Tensor& labels, EvalResult* r) {
  if (!logits.defined() || logits.shape().size() != 2 || logits.shape()[0] != labels.numel()) return false;
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  if (c < 1 || c > kMaxConfusionClasses || (r->confusion_classes != 0 && r->confusion_classes != c)) return false;
  if (r->confusion_classes == 0) {
    r->confusion_classes = c;
    r->confusion.assign(static_cast<size_t>(c * c), 0);
  }
  const std::vector<float> x = logits.to_vector<float>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x.data() + i * c;
    const int64_t best = predicted_class(row, c);
    FASTNN_CHECK(y[i] >= 0 && y[i] < c, "evaluation: label ", y[i], " outside 0..", c - 1);
    ++r->confusion[static_cast<size_t>(y[i] * c + best)];
  }
  return true;
}

std::string misclassified_file(const std::string& shard_path) {
  return std::filesystem::absolute(shard_path).lexically_normal().string();
}

void keep_most_confident(std::vector<MisclassifiedImage>* images) {
  std::sort(images->begin(), images->end(), [](const MisclassifiedImage& a, const MisclassifiedImage& b) {
    return std::tie(b.confidence, a.file, a.record) < std::tie(a.confidence, b.file, b.record);
  });
  if (images->size() > kMaxMisclassified) images->resize(kMaxMisclassified);
}

void note_misclassified(const Tensor& logits, const Tensor& labels, std::span<const pipeline::SampleSource> sources,
                        const pipeline::FileList& files, EvalResult* r) {
  if (!logits.defined() || logits.shape().size() != 2 || logits.shape()[0] != labels.numel() ||
      sources.size() != static_cast<size_t>(labels.numel()))
    return;
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  const std::vector<float> x = logits.to_vector<float>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  const size_t before = r->misclassified.size();
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x.data() + i * c;
    const int64_t best = predicted_class(row, c);
    const pipeline::SampleSource& src = sources[static_cast<size_t>(i)];
    if (best == y[i] || src.file >= files.files.size()) continue;  // right, or a cached record
    double sum = 0;  // softmax of the arg-max: 1 / sum_k exp(z_k - z_max)
    for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(row[k]) - row[best]);
    r->misclassified.push_back({.file = misclassified_file(files.files[src.file].path), .record = src.record, .offset = src.offset,
                                .label = y[i], .predicted = best, .confidence = 1.0 / sum});
  }
  if (r->misclassified.size() != before) keep_most_confident(&r->misclassified);
}

EvalResult evaluate_dataset(graph::Graph& g, const EvalBatchFn& evaluate_batch, const pipeline::Dataset& ds,
                            const EvalLogitsFn& logits, Progress* progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t train_batch = g.batch_size();
  EvalResult r;
  double loss_sum = 0;
  int64_t top1 = 0, top5 = 0;
  bool confusion_ok = true;
  auto it = ds.make_iterator();
  for (pipeline::BatchHandle b; it->next(&b);) {
    if (b->size() != g.batch_size()) g.set_batch_size(b->size());
    const std::vector<pipeline::SampleSource> sources(b->sources(), b->sources() + b->size());
    const runner::BatchTensors t = runner::wrap_batch(std::move(b));  // the batch's own buffer, no copy
    const StepResult s = evaluate_batch(t.images, t.labels);
    // One batch that cannot be counted (a head's embedding, too many classes) drops the whole matrix.
    if (logits) {
      const Tensor host_logits = logits();  // one copy from a device graph
      if (confusion_ok) confusion_ok = count_confusion(host_logits, t.labels, &r);
      note_misclassified(host_logits, t.labels, sources, ds.files(), &r);
    }
    loss_sum += s.main_loss * static_cast<double>(s.examples);
    top1 += s.correct;
    top5 += s.correct_top5;
    r.num_examples += s.examples;
    if (progress) progress->add(static_cast<uint64_t>(s.examples));
  }
  if (g.batch_size() != train_batch) g.set_batch_size(train_batch);
  if (!confusion_ok) r.confusion_classes = 0, r.confusion.clear();
  if (r.num_examples > 0) {
    const double n = static_cast<double>(r.num_examples);
    r.top1 = static_cast<double>(top1) / n;
    r.top5 = static_cast<double>(top5) / n;
    r.loss = loss_sum / n;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::optional<EvalResult> recorded_eval(const std::string& metrics_jsonl, int64_t step) {
  try {
    const RunMetrics m = read_run_metrics(metrics_jsonl);
    for (auto e = m.evals.rbegin(); e != m.evals.rend(); ++e)
      if (e->step == step)
        return EvalResult{.top1 = e->top1, .top5 = e->top5, .loss = e->loss, .num_examples = e->num_examples};
  } catch (const Error&) {
  }
  return std::nullopt;
}

}  // namespace fastnn::loop
