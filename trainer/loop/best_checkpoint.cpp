#include "trainer/loop/best_checkpoint.h"

#include <cmath>

#include "core/check.h"
#include "core/logging.h"
#include "trainer/metrics/run_report.h"

namespace fastnn::loop {

BestTracker::BestTracker(const JobConfig& c)
    : metric_(c.eval_metric()),
      keep_best_(c.keep_best_checkpoint()),
      lower_is_better_(c.eval_metric() == "loss"),
      patience_(c.early_stopping_patience()),
      min_delta_(c.early_stopping_min_delta()) {
  if (metric_ != "top1" && metric_ != "top5" && metric_ != "loss")
    throw ConfigError(str("eval_metric must be top1, top5 or loss, got \"", metric_, "\""));
  if (patience_ < 0) throw ConfigError(str("early_stopping_patience must be >= 0, got ", patience_));
  if (!(min_delta_ >= 0) || !std::isfinite(min_delta_))
    throw ConfigError(str("early_stopping_min_delta must be a finite number >= 0, got ", min_delta_));
  if (enabled() && c.eval_every_n_steps() <= 0)
    throw ConfigError(str(keep_best_ ? "keep_best_checkpoint" : "early_stopping_patience",
                          " watches the evaluations during training, but eval_every_n_steps is 0 (only the final "
                          "evaluation): set eval_every_n_steps, e.g. to the steps of one epoch"));
}

bool BestTracker::add(int64_t step, double top1, double top5, double loss) {
  const double v = metric_ == "top1" ? top1 : metric_ == "top5" ? top5 : loss;
  const bool better = best_step_ < 0 || (lower_is_better_ ? v < best_ - min_delta_ : v > best_ + min_delta_);
  if (!better) {
    ++stale_;
    return false;
  }
  best_ = v;
  best_step_ = step;
  stale_ = 0;
  return true;
}

void BestTracker::replay(const std::string& metrics_jsonl, int64_t up_to_step) {
  try {
    const RunMetrics m = read_run_metrics(metrics_jsonl);
    for (const RunMetrics::Eval& e : m.evals)
      if (e.step <= up_to_step) add(e.step, e.top1, e.top5, e.loss);
  } catch (const Error&) {
  }
}

std::string BestTracker::describe_best() const {
  return has_best() ? str(metric_, " ", best_, " at step ", best_step_) : str("no evaluation of ", metric_, " yet");
}

BestDecision agree_on_evaluation(BestTracker& t, Communicator& comm, int64_t step, double top1, double top5,
                                 double loss) {
  int64_t d[2] = {0, 0};
  if (comm.rank() == 0) {
    d[0] = t.add(step, top1, top5, loss) ? 1 : 0;
    d[1] = t.patience_exhausted() ? 1 : 0;
  }
  if (comm.world_size() > 1) comm.allreduce_max(std::span<int64_t>(d, 2));
  return {d[0] != 0, d[1] != 0};
}

bool agree_on_restart(BestTracker& t, Communicator& comm, const std::string& metrics_jsonl, int64_t start_step,
                      int patience) {
  int64_t exhausted = 0;
  if (comm.rank() == 0 && start_step > 0) {
    t.replay(metrics_jsonl, start_step);
    exhausted = t.patience_exhausted() ? 1 : 0;
    if (exhausted)
      log_info("this run stopped early at step ", start_step, " (", t.metric(), " did not improve on ", t.describe_best(),
               " for ", t.stale(), " evaluations): nothing to train (raise early_stopping_patience above ", patience,
               " to continue)");
  }
  if (comm.world_size() > 1) comm.allreduce_max(std::span<int64_t>(&exhausted, 1));
  return exhausted != 0;
}

}  // namespace fastnn::loop
