#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/logging.h"
#include "trainer/loop/sanity.h"
#include "trainer/loop/training_run.h"

namespace fastnn::loop {
namespace {

// The slowest-settling moving average of the net's batch norms (the largest decay); -1 without any.
double largest_batch_norm_decay(const NetDef& net) {
  double d = -1;
  for (const LayerDef& l : net.layers())
    if (l.has_batch_norm()) d = std::max(d, static_cast<double>(l.batch_norm().momentum()));
  return d;
}

}  // namespace

void TrainingRun::run_eval(int64_t step, double lr) {
  if (setup_.eval_split.empty()) return;
  runner_->average_state();  // every rank evaluates with the ranks' mean batch-norm statistics
  const EvalResult r = evaluate_held_out();
  summary_.evaluated = true;
  summary_.eval = r;
  watch_best(step, lr, r);
  if (!dp_.chief()) {
    eval_window_.reset();
    return run_moving_average_eval(step);  // a collective evaluation: every rank takes part
  }
  const size_t shared = setup_.eval_files_also_trained.size();
  const std::string split = shared ? str(setup_.eval_split, ", NOT held out: ", shared, " file(s) also trained on") : setup_.eval_split;
  if (options_.progress_lines)
    std::printf("eval at step %lld (%s, %lld examples, %.1f s): top1 %.4f  top5 %.4f  loss %.4f\n",
              static_cast<long long>(step), split.c_str(), static_cast<long long>(r.num_examples),
              r.seconds, r.top1, r.top5, r.loss);
  if (eval_window_.examples > 0) {
    GapReport gap = accuracy_gap_report(eval_window_.accuracy(), r.top1);
    if (setup_.mix.enabled()) {  // a mixed batch's accuracy is not comparable: no overfitting verdict from it
      gap.suspicious = false;
      gap.line += " (mixed batches: train accuracy counts each image's own label)";
    }
    if (gap.suspicious) log_warn(gap.line);
    else if (options_.progress_lines) std::printf("%s\n", gap.line.c_str());
    // Training's accuracy as the last log line said it (the window since the last evaluation also
    // holds the run's first, untrained steps).
    const double train_accuracy = last_logged_accuracy_ >= 0 ? last_logged_accuracy_ : eval_window_.accuracy();
    const std::string collapse = eval_collapse_report(
        {.train_accuracy = train_accuracy, .eval_accuracy = r.top1, .eval_loss = r.loss,
         .num_classes = r.confusion_classes, .confusion = r.confusion, .steps = step,
         .batch_norm_decay = largest_batch_norm_decay(setup_.net)});
    if (!collapse.empty()) log_warn(collapse);
  }
  std::fflush(stdout);
  eval_window_.reset();
  std::map<std::string, double> extra = {{"train_seconds", loop_seconds_}};  // time to accuracy
  if (shared) extra["eval_files_also_trained"] = static_cast<double>(shared);  // not a held-out accuracy
  jsonl_->write(EvalLogEntry{.step = step, .epoch = epoch_of(step), .split = setup_.eval_split, .top1 = r.top1,
                             .top5 = r.top5, .loss = r.loss, .num_examples = r.num_examples,
                             .extra = std::move(extra),
                             .confusion_classes = r.confusion_classes, .confusion = r.confusion,
                             .misclassified = r.misclassified});
  if (!eval_events_) eval_events_ = std::make_unique<EventFileWriter>(setup_.run_dir + "/eval");
  eval_events_->add_scalars({{"loss", r.loss}, {"accuracy", r.top1}, {"top5", r.top5}}, step);
  run_moving_average_eval(step);
}

// Agreed over the ranks, so a best checkpoint with sharded head rows is saved by all of them and all
// stop at the same step.
void TrainingRun::watch_best(int64_t step, double lr, const EvalResult& r) {
  if (!best_.enabled()) return;
  const BestDecision d = agree_on_evaluation(best_, dp_.comm(), step, r.top1, r.top5, r.loss);
  if (d.improved && best_.keeps_best()) save(step, lr, /*best=*/true);
  if (d.stop && step < total_) {
    stop_early_ = true;
    if (dp_.chief())
      log_info("early stopping at step ", step, ": ", best_.metric(), " has not improved on ", best_.describe_best(),
               " for ", best_.stale(), " evaluations (early_stopping_patience=", c_.early_stopping_patience(), ")");
  }
}

// After each evaluation of the weights, the averaged model on the same split, as `fastnn eval --checkpoint
// RUN/ema` gives it (timm validates its EMA model each epoch too): the averages are swapped into the runner
// for the evaluation and the weights put back. metrics.jsonl gets an "eval_moving_averages" line, the
// eval event file "moving_averages/*" tags. Under mpirun every rank takes part, with the averages' batch-norm
// statistics averaged over the ranks (rank_averaged_shadows), as the saved RUN/ema has them.
void TrainingRun::run_moving_average_eval(int64_t step) {
  if (!ema_ || setup_.eval_split.empty()) return;
  const std::vector<NamedArray> weights = runner_->host_variables();
  runner_->set_host_variables(rank_averaged_shadows());
  const EvalResult r = evaluate_held_out();
  runner_->set_host_variables(weights);
  if (!dp_.chief()) return;
  if (options_.progress_lines)
    std::printf("eval of the moving averages at step %lld (%s, %lld examples): top1 %.4f  top5 %.4f  loss %.4f\n",
                static_cast<long long>(step), setup_.eval_split.c_str(), static_cast<long long>(r.num_examples), r.top1,
                r.top5, r.loss);
  std::fflush(stdout);
  jsonl_->write(EvalLogEntry{.event = "eval_moving_averages", .step = step, .epoch = epoch_of(step),
                             .split = setup_.eval_split, .top1 = r.top1, .top5 = r.top5, .loss = r.loss,
                             .num_examples = r.num_examples});
  eval_events_->add_scalars(
      {{"moving_averages/loss", r.loss}, {"moving_averages/accuracy", r.top1}, {"moving_averages/top5", r.top5}}, step);
}

// Each rank's averages of the batch-norm statistics follow its own batches (runner_->average_state() makes
// the model's own agree before evaluations and saves); averaging them over the ranks gives the averages of
// the agreed statistics, the update being linear. The weights' averages are equal on every rank already
// and are left alone (a sum over three ranks divided by three need not give the value back exactly).
std::vector<NamedArray> TrainingRun::rank_averaged_shadows() {
  std::vector<NamedArray> shadows = ema_->shadows();
  if (dp_.world() == 1) return shadows;
  std::set<std::string> statistics;
  for (const graph::NamedTensor& t : runner_->graph().state()) statistics.insert(t.name);
  std::vector<std::span<float>> buffers;
  for (NamedArray& a : shadows)
    if (statistics.count(a.name)) buffers.emplace_back(a.data);
  dp_.comm().allreduce_average_packed(buffers);
  return shadows;
}

// Before the first step, after the variables are restored and broadcast: the averages start at the
// variables' values, or at those saved with the checkpoint the run resumes from (RUN/ema/ckpt-<step>).
void TrainingRun::start_moving_averages() {
  ema_ = make_moving_averages(c_, runner_->variables(), setup_.run_dir, start_);
  if (!ema_ || !dp_.chief()) return;
  make_directories(moving_average_dir(setup_.run_dir));
  ema_ckpt_ = std::make_unique<checkpoint::CheckpointManager>(
      moving_average_dir(setup_.run_dir), checkpoint::CheckpointManager::Options{.keep_max = c_.keep_checkpoint_max()});
}

EvalResult TrainingRun::evaluate_held_out() {
  runner::StepRunner& runner = *runner_;
  return dp_.evaluate(
      runner.graph(), [&runner](const Tensor& x, const Tensor& y) { return runner.evaluate(x, y); }, setup_, c_,
      runner.collective_evaluation(), [&runner] { return runner.host_logits(); });
}

// Before the first step: RUN/best/ on every rank (sharded rows are written there by all), and a resumed
// run's earlier evaluations replayed, so patience counts as in the uninterrupted run.
void TrainingRun::start_best_tracking() {
  if (!best_.enabled()) return;
  if (setup_.eval_split.empty())
    throw ConfigError("keep_best_checkpoint / early_stopping_patience watch the evaluations, but this run has no "
                      "held-out split (convert with --validation-fraction or split folders, or set eval_files)");
  if (best_.keeps_best()) {
    const std::string dir = setup_.run_dir + "/best";
    make_directories(dir);
    if (dp_.chief()) best_ckpt_ = std::make_unique<checkpoint::CheckpointManager>(dir, checkpoint::CheckpointManager::Options{.keep_max = 1});
  }
  stop_early_ = agree_on_restart(best_, dp_.comm(), setup_.run_dir + "/metrics.jsonl", start_,
                                 c_.early_stopping_patience());
}

void TrainingRun::note_best() {
  if (!best_.enabled() || !dp_.chief() || !best_.has_best()) return;
  summary_.best_metric = best_.metric();
  summary_.best_step = best_.best_step();
  summary_.best_value = best_.best_value();
  if (summary_.best_checkpoint.empty() && best_ckpt_) {  // saved by an earlier start of this run
    const std::vector<checkpoint::CheckpointInfo> kept = checkpoint::list_committed_latest_first(best_ckpt_->dir());
    if (!kept.empty()) summary_.best_checkpoint = kept.front().prefix;
  }
}

// A rerun that trains nothing (the run was finished, or early stopping ended it) gives the eval that
// metrics.jsonl recorded at its last step, so it still answers "how good is it".
void TrainingRun::recall_eval(int64_t step) {
  if (const std::optional<EvalResult> e = recorded_eval(setup_.run_dir + "/metrics.jsonl", step)) {
    summary_.evaluated = true;
    summary_.eval = *e;
  }
}

}  // namespace fastnn::loop
