// keep_best_checkpoint and early stopping (JobConfig: keep_best_checkpoint, eval_metric,
// early_stopping_patience, early_stopping_min_delta): which evaluations improve on the best so far and
// how many in a row have not.
//
// An evaluation improves when it is the first, or its eval_metric beats the best so far by more than
// early_stopping_min_delta (top1, top5: higher; loss: lower). Patience runs out when that many
// evaluations in a row did not improve. A resumed run replays the evaluations metrics.jsonl recorded up
// to its start step (the chief's file), so it stops where the uninterrupted run would have.
// The training loop asks on every rank; the chief decides and the answer is agreed over the ranks.
#pragma once

#include <cstdint>
#include <string>

#include "schemas/job_config.pb.h"
#include "trainer/comm/communicator.h"

namespace fastnn::loop {

class BestTracker {
 public:
  // ConfigError when keep_best_checkpoint or early_stopping_patience is set without evaluations
  // (eval_every_n_steps 0 evaluates only at the end: nothing to compare), or a negative
  // patience or min_delta.
  explicit BestTracker(const JobConfig& config);

  bool keeps_best() const { return keep_best_; }
  bool stops_early() const { return patience_ > 0; }
  bool enabled() const { return keep_best_ || patience_ > 0; }

  // One evaluation; true when it is the new best.
  bool add(int64_t step, double top1, double top5, double loss);
  // The evaluations of metrics.jsonl at steps <= `up_to_step` (a torn or missing file: none).
  void replay(const std::string& metrics_jsonl, int64_t up_to_step);

  bool patience_exhausted() const { return patience_ > 0 && stale_ >= patience_; }
  bool has_best() const { return best_step_ >= 0; }
  int64_t best_step() const { return best_step_; }
  double best_value() const { return best_; }
  const std::string& metric() const { return metric_; }
  int stale() const { return stale_; }
  // "top1 0.8432 at step 800" (the best so far).
  std::string describe_best() const;

 private:
  std::string metric_;
  bool keep_best_ = false, lower_is_better_ = false;
  int patience_ = 0, stale_ = 0;
  double min_delta_ = 0, best_ = 0;
  int64_t best_step_ = -1;
};

struct BestDecision {
  bool improved = false;  // a new best: keep_best_checkpoint saves it
  bool stop = false;      // patience ran out
};

// One evaluation seen by every rank of `comm`: the rank 0's tracker decides (it alone replayed
// metrics.jsonl), the answer is agreed over the ranks, and rank 0 says an early stop.
BestDecision agree_on_evaluation(BestTracker& tracker, Communicator& comm, int64_t step, double top1, double top5,
                                 double loss);
// At a (re)start at `start_step` > 0: rank 0 replays metrics.jsonl; true on every rank when early
// stopping had already ended the run (rank 0 says so).
bool agree_on_restart(BestTracker& tracker, Communicator& comm, const std::string& metrics_jsonl, int64_t start_step,
                      int patience);

}  // namespace fastnn::loop
