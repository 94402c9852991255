#include "trainer/loop/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/logging.h"
#include "core/progress.h"
#include "trainer/checkpoint/checkpoint_classes.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/optimizer_state.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/checkpoint/sharded_save.h"
#include "trainer/config/field_effects.h"
#include "trainer/config/job_config.h"
#include "trainer/head/head_config.h"
#include "trainer/runner/batch_tensors.h"
#include "trainer/loop/best_checkpoint.h"
#include "trainer/loop/capabilities.h"
#include "trainer/loop/class_weights.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/runner/device_setup.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/loop/profiler.h"
#include "trainer/loop/input_geometry.h"
#include "trainer/loop/moving_average.h"
#include "trainer/loop/run_directory.h"
#include "trainer/loop/run_setup.h"
#include "trainer/loop/sanity.h"
#include "trainer/runner/step_runner.h"
#include "trainer/loop/step_window.h"
#include "trainer/loop/training_run.h"
#include "trainer/loop/stop_signal.h"
#include "trainer/metrics/event_writer.h"
#include "trainer/metrics/jsonl_writer.h"
#include "trainer/metrics/run_report.h"
#include "trainer/schedule/lr_schedule.h"

namespace fastnn::loop {
namespace {

// The runner's options for this rank: its seed, and the gradient average over the ranks (the host
// communicator for the CPU runner, NCCL collectives for the CUDA runner).
runner::StepRunnerOptions rank_runner_options(const JobConfig& c, const runner::ComputeTarget& target, DataParallel& dp,
                                      runner::DeviceCollectives* collectives) {
  runner::StepRunnerOptions o = runner::step_runner_options(c, target);
  o.seed = rank_seed(o.seed, dp.rank());
  o.collectives = collectives;
  o.host_comm = &dp.comm();
  return o;
}

}  // namespace

TrainingRun::TrainingRun(const JobConfig& config, const TrainOptions& options, DataParallel& dp)
    : dp_(dp), c_(config), options_(options), setup_(make_run_setup(config)),
      target_(runner::resolve_compute_target(config, dp.comm().local_rank())), best_(config) {
  check_before_allocating(setup_, c_, target_, dp_.world(), dp_.chief());  // refuses what cannot fit
  collectives_ = make_gradient_collectives(c_, dp_, target_);  // GPU data parallel: NCCL; else none
  if (collectives_) log_info("gradients averaged over ", dp_.world(), " rank(s) with NCCL on ", target_.describe());
  runner::StepRunnerOptions ro = rank_runner_options(c_, target_, dp_, collectives_.get());
  ro.input = setup_.input;
  ro.head = head_for(c_, setup_);
  ro.class_weights = resolve_class_weights(c_, setup_);
  if (dp_.chief() && !ro.class_weights.empty())
    log_info("class_weights=", c_.class_weights(), ": ", class_weights_text(ro.class_weights));
  runner_ = runner::make_step_runner(setup_.net, ro);
  if (c_.sync_batch_norm()) dp_.sync_batch_norm(runner_->graph());
  setup_.batch = runner_->batch_format();  // the pipeline makes what the runner reads fastest
  train_ds_.emplace(make_train_dataset(setup_, c_, dp_.rank(), dp_.world()));
  if (dp_.chief() && c_.class_balanced_sampling())
    log_info(class_balance_text(train_ds_->balanced_class_counts(), dp_.world()));
  bpe_ = train_ds_->batches_per_epoch();
  dp_.check_world(bpe_, static_cast<int64_t>(train_ds_->files().files.size()));
  FASTNN_CHECK(bpe_ > 0, "the train split has fewer records than batch_size x gradient_accumulation_steps = ",
               step_batch_size(c_));
  total_ = total_train_steps(c_, bpe_);
  JobConfig sc = c_;
  sc.set_stop_at_step(total_);  // cosine and the luong schemes end where training ends
  schedule_ = make_lr_schedule(sc, setup_.samples_per_epoch, global_batch());
  make_directories(setup_.run_dir);  // IoError naming the part that fails (a file in the way, read-only)
}

void TrainingRun::restore_or_init() {
  {
    if (checkpoint::LoadedCheckpoint* resumed = run_dir_->resume_from()) {  // --resume, or the same run continued
      checkpoint::LoadedCheckpoint& l = *resumed;
      if (l.meta.has_model_name() && l.meta.model_name() != setup_.model_name)
        throw ConfigError(str("--resume: ", l.prefix, " holds ", l.meta.model_name(), ", not ", setup_.model_name));
      if (const std::optional<ClassMap> trained = checkpoint::checkpoint_class_map(l); trained && setup_.classes)
        require_same_classes(*trained, *setup_.classes, str("--resume: ", l.prefix, " and ", c_.dataset_dir()),
                             kClassMapAdvice);
      if (l.meta.has_config() && (step_batch_size(l.meta.config()) * std::max(1, l.meta.world_size()) != global_batch() ||
                                  l.meta.config().seed() != c_.seed() ||
                                  l.meta.config().shuffle_buffer_size() != c_.shuffle_buffer_size()))
        log_warn("--resume: the global batch (ranks x batch_size x gradient_accumulation_steps), seed or shuffle_buffer_size differ from ", l.prefix,
                 "; the data order will not continue the interrupted run");
      else if (l.meta.world_size() != dp_.world() && c_.shuffle_buffer_size() > 1)
        log_warn("--resume: ", l.prefix, " was written by ", l.meta.world_size(), " rank(s), this run has ", dp_.world(),
                 "; each rank shuffles its own shard, so the data order will not continue the interrupted run");
      replay_ = resume_replay_batches(l.meta, dp_.world(), step_batch_size(c_), bpe_);
      runner_->set_host_variables(checkpoint_variables(runner_->variables(), l.weights.arrays(), l.prefix));
      FASTNN_CHECK(l.optimizer.has_value(), l.prefix, ": no optimizer state");
      runner_->import_optimizer_state(checkpoint::optimizer_state_from(*l.optimizer));
      load_head_rows(*runner_, l, /*optimizer=*/true);
      if (l.meta.has_loss_scale()) runner_->restore_loss_scale(l.meta.loss_scale().scale(), l.meta.loss_scale().clean_steps());
      start_ = l.meta.step();
      log_info("resumed from ", l.prefix, " at step ", start_, " (epoch ", epoch_of(start_), ")",
               start_checkpoint(c_).empty() ? "" : str("; the start checkpoint ", start_checkpoint(c_), " is not read"));
      return;
    }
  }
  // task_type=finetune (model_dir) or TF-slim's checkpoint_path (field_effects.h: start_checkpoint).
  if (const std::string path = start_checkpoint(c_); !path.empty()) {
    const std::vector<std::string> exclude = finetune_head_rows(*runner_, path, split_list(c_.checkpoint_exclude_scopes()));
    runner_->set_host_variables(finetune_variables(runner_->variables(), setup_.net, path,
                                                   {.exclude_scopes = exclude,
                                                    .ignore_missing_vars = c_.ignore_missing_vars(),
                                                    .use_moving_averages = c_.checkpoint_use_moving_averages()}));
  }
}

void TrainingRun::log_window(int64_t step, double lr) {
  StepWindow& w = log_window_;
  if (!dp_.chief()) return w.reset();  // the window's sums are global already (average_metrics)
  const double wall = seconds_since(w.start);
  TrainLogEntry e;
  e.step = step;
  e.epoch = epoch_of(step);
  e.loss = w.steps ? w.loss_sum / static_cast<double>(w.steps) : 0;
  e.accuracy = w.accuracy();
  last_logged_accuracy_ = e.accuracy;
  e.lr = lr;
  e.images_per_sec = wall > 0 ? static_cast<double>(w.examples) / wall : 0;
  e.data_wait_fraction = wall > 0 ? w.wait_s / wall : 0;
  // TensorFlow Estimator's layout: training's scalars in RUN/, evaluation's in RUN/eval/ under the same
  // tags, so TensorBoard draws train and eval loss (and accuracy) in one chart.
  std::vector<std::pair<std::string, double>> scalars = {
      {"loss", e.loss}, {"accuracy", e.accuracy}, {"lr", lr},
      {"images_per_sec", e.images_per_sec}, {"data_wait_fraction", e.data_wait_fraction}};
  // Cores' worth of CPU over the window: the whole process (the input pipeline's workers included) and the
  // step loop's thread alone (on cuda it launches the step and waits for the device: near 1 when it
  // spins while it waits).
  if (wall > 0) {
    e.extra["host_cpu_cores"] = (process_cpu_seconds() - w.process_cpu) / wall;
    e.extra["loop_thread_cpu_cores"] = (thread_cpu_seconds() - w.loop_cpu) / wall;
  }
  if (target_.dtype == DType::kF16) {  // device-only fields (docs/CHECKPOINTS.md)
    const runner::StepRunnerStats st = runner_->stats();
    e.extra["loss_scale"] = st.loss_scale;
    e.extra["skipped_steps"] = static_cast<double>(st.skipped_steps);
    scalars.push_back({"loss_scale", st.loss_scale});
  }
  // ETA: the step loop's mean time per step so far (evaluations excluded) over the steps left.
  const double per_step = step > start_ ? loop_seconds_ / static_cast<double>(step - start_) : 0;
  if (options_.progress_lines)
    std::printf("step %lld/%lld  epoch %.2f  loss %.4f  acc %.4f  lr %.5g  %.0f img/s  data wait %.0f%%  eta %s\n",
              static_cast<long long>(step), static_cast<long long>(total_), e.epoch, e.loss, e.accuracy, lr,
              e.images_per_sec, 100 * e.data_wait_fraction,
              seconds_text(per_step * static_cast<double>(total_ - step)).c_str());
  std::fflush(stdout);
  jsonl_->write(e);
  // TensorBoard's scalars: at every log step, or at most once per save_summaries_secs (TF-slim's habit).
  if (c_.save_summaries_secs() <= 0 || !last_summary_ || seconds_since(*last_summary_) >= c_.save_summaries_secs()) {
    events_->add_scalars(scalars, step);
    last_summary_ = Clock::now();
  }
  w.reset();
}

void TrainingRun::save(int64_t step, double lr, bool best) {
  runner_->average_state();  // the checkpoint holds the ranks' mean batch-norm statistics
  const std::vector<NamedArray> averages = ema_ && !best ? rank_averaged_shadows() : std::vector<NamedArray>{};
  // A sharded head's rows are written by every rank into its own shard file (a collective save).
  const std::vector<checkpoint::RowShardSlice> rows = runner_->sharded_rows();
  if (!dp_.chief() && rows.empty()) return;
  const std::vector<NamedArray> values = runner_->host_variables();  // f32 master weights on every device
  const std::vector<checkpoint::ArrayView> weights = variable_views(runner_->variables(), values);
  const std::vector<NamedArray> state = runner_->export_optimizer_state();
  CheckpointMeta meta;
  meta.set_epoch(step / bpe_);
  meta.set_samples_seen(step * global_batch());
  meta.set_samples_in_epoch((step % bpe_) * global_batch());
  meta.set_lr_schedule_step(step);
  meta.set_learning_rate(lr);
  meta.set_world_size(dp_.world());
  meta.mutable_rng()->set_seed(static_cast<uint64_t>(c_.seed()));
  *meta.mutable_config() = c_;
  meta.set_model_name(setup_.model_name);
  meta.set_optimizer(c_.optimizer());
  if (setup_.classes && static_cast<int64_t>(setup_.classes->names.size()) == setup_.num_classes)
    for (const std::string& name : setup_.classes->names) meta.add_class_names(name);
  if (target_.dtype == DType::kF16) {
    const runner::StepRunnerStats st = runner_->stats();
    LossScaleState* ls = meta.mutable_loss_scale();
    ls->set_scale(st.loss_scale);
    ls->set_clean_steps(st.clean_steps);
    ls->set_dynamic(c_.dynamic_loss_scale());
  }
  const std::vector<checkpoint::ArrayView> optimizer = checkpoint::optimizer_state_views(state);
  if (ema_ && !best && dp_.chief())  // first: a committed checkpoint of the run always has its averages
    ema_ckpt_->save(step, variable_views(runner_->variables(), averages), {}, meta);
  checkpoint::CheckpointManager* manager = best ? best_ckpt_.get() : ckpt_.get();
  const std::string dir = best ? setup_.run_dir + "/best" : setup_.run_dir;
  const checkpoint::CheckpointInfo info =
      rows.empty() ? manager->save(step, weights, optimizer, std::move(meta))
                   : checkpoint::save_sharded_checkpoint(dp_.comm(), dp_.chief() ? manager : nullptr, dir, step, rows, weights,
                                                   optimizer, std::move(meta));
  if (!dp_.chief()) return;
  if (best) {
    summary_.best_checkpoint = info.prefix;
    log_info("saved the best checkpoint so far (", best_.describe_best(), "): ", info.prefix);
  } else {
    log_info("saved checkpoint ", info.prefix);
  }
}

TrainSummary TrainingRun::run() {
  StopSignalScope stop_scope;  // SIGTERM/SIGINT: checkpoint at the current step, then return
  run_dir_ = std::make_unique<RunDirectory>(setup_.run_dir, c_, RunDirectory::Options{.resume = options_.resume,
      .overwrite = options_.overwrite, .writer = dp_.chief(), .world = dp_.world()});
  ckpt_ = std::make_unique<checkpoint::CheckpointManager>(
      setup_.run_dir, checkpoint::CheckpointManager::Options{.keep_max = c_.keep_checkpoint_max()});
  restore_or_init();
  dp_.sync_start(runner_->graph(), start_);  // same model and step everywhere,
  runner_->broadcast_variables();  // and rank 0's variables on every rank
  start_best_tracking();
  start_moving_averages();
  if (stop_early_) {  // a rerun of a run that early stopping ended: nothing to train
    summary_ = {.first_step = start_, .steps = start_, .run_dir = setup_.run_dir, .rank = dp_.rank(),
                .world_size = dp_.world(), .stopped_early = true};
    if (dp_.chief()) recall_eval(start_);
    note_best();
    return summary_;
  }
  if (dp_.chief()) {
    jsonl_ = std::make_unique<JsonlMetricsWriter>(setup_.run_dir + "/metrics.jsonl", /*append=*/true);
    events_ = std::make_unique<EventFileWriter>(setup_.run_dir);
  }
  const bool logging = has_hook(c_, "LoggingTensorHook") && c_.log_loss_every_n_iters() > 0;
  const bool saving = has_hook(c_, "CheckpointSaverHook");
  StepProfiler profiler(has_hook(c_, "ProfilerHook") && dp_.rank() == c_.profile_at_task() ? c_.profile_every_n_iters() : 0,
                        setup_.run_dir, *runner_);
  if (c_.print_model_statistics() && dp_.chief()) print_model_statistics(runner_->graph());
  if (c_.log_device_placement() && dp_.chief()) log_info(device_placement_text(runner_->graph(), target_));
  const bool cpu_bf16 = target_.device == Device::kCpu && c_.precision() == "bf16";
  log_info("training ", setup_.model_name, " on ", cpu_bf16 ? "cpu (bf16 convolutions and fully connected layers, f32 otherwise)" : target_.describe(), " (", setup_.num_classes, " classes, ",
           runner_->graph().parameters().size(), " parameter tensors) on ", c_.dataset_dir(), ": ", bpe_,
           " batches of ", global_batch(), " per epoch",
           c_.gradient_accumulation_steps() > 1
               ? str(" (each ", c_.gradient_accumulation_steps(), " accumulated batches of ", c_.batch_size(), " per rank)")
               : "",
           ", steps ", start_, " -> ", total_, ", ", c_.optimizer(), ", lr ",
           schedule_.describe(), ", batches ", setup_.batch.describe(),
           ema_ ? str(", moving averages (decay ", c_.moving_average_decay(), ") saved in ",
                      moving_average_dir(setup_.run_dir))
                : "");
  if (dp_.chief()) {  // what the preset does to these images, and a warning when it throws most of them away
    const InputGeometry geometry = describe_input_geometry(setup_);
    log_info(geometry.line);
    if (!geometry.warning.empty()) log_warn(geometry.warning);
  }
  if (dp_.chief() && setup_.eval_split.empty())
    log_warn("no held-out evaluation: ", c_.dataset_dir(), " has no validation or test split and no eval_files are "
             "named, so this run reports training accuracy only (convert with --validation-fraction or split folders, "
             "or set eval_files)");
  if (dp_.chief() && setup_.classes && static_cast<int64_t>(setup_.classes->names.size()) != setup_.num_classes)
    log_warn("num_classes=", setup_.num_classes, " but ", setup_.classes->origin, " names ", setup_.classes->names.size(),
             " classes: checkpoints record no class names, so eval and predict cannot check them");

  // Resuming starts the deterministic stream at the saved position without decoding what came before.
  auto it = train_ds_->make_iterator(static_cast<uint64_t>(replay_));
  pipeline::BatchHandle batch;
  summary_.first_step = start_;
  summary_.run_dir = setup_.run_dir;
  summary_.rank = dp_.rank();
  summary_.world_size = dp_.world();
  int64_t loop_images = 0;
  int64_t last_saved = -1;
  auto last_save_clock = Clock::now();  // save_checkpoints_secs counts from the start, then from each save
  double lr = schedule_.lr_at(start_);
  log_window_.reset();
  eval_window_.reset();
  // One batch of lookahead: batch k+1 is taken from the pipeline and handed to the runner (prefetch)
  // before step k runs, so a GPU runner's copy of it overlaps step k. The order of batches is unchanged.
  runner::BatchTensors next;
  double next_wait = 0;
  auto fetch = [&] {
    const auto f0 = Clock::now();
    FASTNN_CHECK(it->next(&batch), "the training pipeline ended early");
    next_wait = seconds_since(f0);
    next = runner::wrap_batch(std::move(batch));  // the pipeline's own buffer, no copy
  };
  // Results arrive one step late (StepRunner::queue_train: a GPU never waits for the host between
  // steps); each is checked and counted as it arrives, and every log line, checkpoint, evaluation and
  // the end drain the queue first, so they see every step up to theirs.
  struct Queued {
    int64_t step;
    double lr, wait;
  };
  std::optional<Queued> queued;  // the step whose results the runner still holds
  auto arrived = [&](std::optional<StepResult> result) {
    if (!result) return;
    FASTNN_CHECK(queued, "training loop: results of a step that was not queued");
    Queued q = *std::exchange(queued, std::nullopt);
    StepResult& r = *result;
    dp_.average_metrics(r, q.wait);  // this step's metrics over the ranks (the runner averaged the gradients)
    check_loss_finite(r.loss, q.step, q.lr);
    // The first-loss check reads softmax logits (still the first step's: it is drained at once); a
    // classifier head's output is an embedding.
    if (q.step == start_ && start_ == 0 && dp_.chief() && !head::uses_head(c_))
      report_first_loss(r.main_loss, runner_->graph().output(0));
    loop_images += r.examples;
    log_window_.add(r, q.wait);
    eval_window_.add(r, q.wait);
    summary_.last_loss = r.loss;
  };
  for (int64_t step = start_; step < total_; ++step) {
    const auto t0 = Clock::now();
    profiler.begin_step(step);
    if (!next.images.defined()) fetch();  // the first step (later ones were fetched a step ahead)
    const runner::BatchTensors input = std::move(next);
    next = runner::BatchTensors{};
    double wait = next_wait;  // this batch's time in the pipeline's hands
    if (step + 1 < total_) {
      fetch();
      runner_->prefetch(next.images, next.labels);
    }
    profiler.mark("next_batch");
    lr = schedule_.lr_at(step);
    if (c_.save_checkpoints_secs() > 0 && dp_.chief())
      dp_.want_save(seconds_since(last_save_clock) >= c_.save_checkpoints_secs());
    if (setup_.mix.enabled()) runner_->set_label_mix(input.mix_weights);
    std::optional<StepResult> previous =
        runner_->queue_train(input.images, input.labels, static_cast<uint64_t>(step), static_cast<float>(lr));
    arrived(std::move(previous));
    if (ema_) ema_->update(runner_->variables(), step);  // the host variables hold this step's update
    queued = Queued{step, lr, wait};
    const int64_t done = step + 1;
    const bool log_now = logging && (done % c_.log_loss_every_n_iters() == 0 || done == total_);
    const bool save_now = saving && ((c_.save_checkpoints_steps() > 0 && done % c_.save_checkpoints_steps() == 0) ||
                                     (c_.save_checkpoints_secs() > 0 && dp_.save_due()));
    const bool eval_now = c_.eval_every_n_steps() > 0 && done % c_.eval_every_n_steps() == 0 && done < total_;
    if (step == start_ || profiler.profiles(step) || log_now || save_now || eval_now || done == total_)
      arrived(runner_->drain());
    if (const std::string trace = profiler.end_step(); !trace.empty()) log_info("profile written to ", trace);
    loop_seconds_ += seconds_since(t0);
    if (log_now) log_window(done, lr);
    if (save_now) {
      save(done, lr);
      last_saved = done;
      last_save_clock = Clock::now();
      dp_.want_save(false);
    }
    if (eval_now) {
      const StepWindow before_eval;
      run_eval(done, lr);
      log_window_.skip_since(before_eval);
    }
    if (stop_early_) {  // early_stopping_patience ran out at this evaluation (agreed over ranks)
      if (saving && last_saved != done) save(done, lr);
      summary_.stopped_early = true;
      summary_.steps = done;
      break;
    }
    if (dp_.stop_requested()) {  // agreed over ranks: every rank stops after this step (stop_signal.h)
      arrived(runner_->drain());
      if (last_saved != done) save(done, lr);
      summary_.stop_signal = stop_signal() ? stop_signal() : SIGTERM;
      summary_.steps = done;
      close_writers();
      return summary_;
    }
  }
  next = runner::BatchTensors{};
  batch.reset();
  it.reset();
  if (!summary_.stopped_early) {
    if (saving && last_saved != total_ && total_ > start_) save(total_, lr);
    if (total_ > start_) {
      run_eval(total_, lr);  // and the moving averages' (run_moving_average_eval)
    }
    else if (dp_.chief()) {  // a finished run rerun: its final eval line is there already
      summary_.already_finished = true;
      recall_eval(total_);
    }
    summary_.steps = total_;
  }
  note_best();
  summary_.train_seconds = loop_seconds_;
  summary_.images_per_sec = loop_seconds_ > 0 ? static_cast<double>(loop_images) / loop_seconds_ : 0;
  close_writers();
  return summary_;
}

TrainSummary run_training(const JobConfig& config, const TrainOptions& options) {
  DataParallel dp(config);  // a world of one unless started by mpirun (docs/DISTRIBUTED.md)
  try {
    TrainingRun run(config, options, dp);
    return run.run();
  } catch (const std::exception& e) {
    dp.fail(e);  // an error on one rank ends the whole job instead of leaving the others waiting
    throw;
  }
}

}  // namespace fastnn::loop
