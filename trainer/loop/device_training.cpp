#include "trainer/loop/device_training.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/check.h"
#include "core/clock.h"
#include "core/logging.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/optimizer_state.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/loop/evaluate.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/loop/run_setup.h"
#include "trainer/loop/sanity.h"
#include "trainer/loop/step_runner.h"
#include "trainer/metrics/event_writer.h"
#include "trainer/metrics/jsonl_writer.h"
#include "trainer/schedule/lr_schedule.h"

namespace fastnn::loop {
namespace {


}  // namespace

TrainSummary run_device_training(const JobConfig& c, const TrainOptions& options, DataParallel& dp) {
  if (options.resume) throw ConfigError("--resume with device=cuda is not supported yet (resume on device=cpu)");
  if (c.task_type() == "finetune") throw ConfigError("task_type=finetune with device=cuda is not supported yet");
  if (c.sync_batch_norm() && dp.world() > 1)
    throw ConfigError("sync_batch_norm with device=cuda is not supported yet (the CPU backend has it)");
  const RunSetup setup = make_run_setup(c);
  StepRunnerOptions ro = step_runner_options(c, resolve_compute_target(c, dp.comm().local_rank()));
  ro.seed = rank_seed(ro.seed, dp.rank());
  // Gradients over NCCL with several ranks, or with one when comm_backend=nccl asks for the path.
  const std::unique_ptr<DeviceCollectives> collectives = make_gradient_collectives(c, dp, ro.target);
  ro.collectives = collectives.get();
  if (collectives)
    log_info("gradients averaged over ", dp.world(), " rank(s) with NCCL on ", ro.target.describe());
  pipeline::Dataset train_ds = make_train_dataset(setup, c, dp.rank(), dp.world());
  const int64_t bpe = train_ds.batches_per_epoch();
  dp.check_world(bpe, static_cast<int64_t>(train_ds.files().files.size()));
  FASTNN_CHECK(bpe > 0, "the train split has fewer records than batch_size = ", c.batch_size());
  auto runner = make_step_runner(setup.net, ro);
  runner->broadcast_variables();  // rank 0's initial weights everywhere
  const int64_t total = total_train_steps(c, bpe);
  JobConfig sc = c;
  sc.set_stop_at_step(total);
  const int64_t global_batch = static_cast<int64_t>(dp.world()) * c.batch_size();
  const LrSchedule schedule = make_lr_schedule(sc, setup.samples_per_epoch, global_batch);
  // Rank 0 writes every output (checkpoints, metrics, events); the others only train.
  std::unique_ptr<ckpt::CheckpointManager> ckpt;
  std::unique_ptr<JsonlMetricsWriter> jsonl;
  std::unique_ptr<EventFileWriter> events;
  if (dp.chief()) {
    std::filesystem::create_directories(setup.run_dir);
    ckpt::CheckpointManager::Options ckpt_options;
    ckpt_options.keep_max = c.keep_checkpoint_max();
    ckpt = std::make_unique<ckpt::CheckpointManager>(setup.run_dir, ckpt_options);
    jsonl = std::make_unique<JsonlMetricsWriter>(setup.run_dir + "/metrics.jsonl", false);
    events = std::make_unique<EventFileWriter>(setup.run_dir);
  }
  const bool logging = has_hook(c, "LoggingTensorHook") && c.log_loss_every_n_iters() > 0;
  const bool saving = has_hook(c, "CheckpointSaverHook");
  if (has_hook(c, "ProfilerHook") && c.profile_every_n_iters() > 0) log_warn("ProfilerHook is not implemented yet");
  auto epoch_of = [&](int64_t s) { return static_cast<double>(s) / static_cast<double>(bpe); };
  log_info("training ", setup.model_name, " on ", ro.target.describe(), " (", setup.num_classes, " classes): ", bpe,
           " batches of ", c.batch_size(), (dp.world() > 1 ? str(" per rank (global ", global_batch, ")") : ""),
           " per epoch, steps 0 -> ", total, ", ", c.optimizer(), ", lr ",
           schedule.describe());

  TrainSummary summary;
  summary.run_dir = setup.run_dir;
  double loop_seconds = 0;  // the step loop's time, evaluation excluded
  auto run_eval = [&](int64_t step) {
    if (setup.eval_split.empty()) return;
    runner->average_state();  // every rank evaluates with the same batch-norm statistics
    const EvalResult r = dp.evaluate(
        runner->graph(), [&runner](const Tensor& x, const Tensor& y) { return runner->evaluate(x, y); }, setup, c);
    summary.evaluated = true;
    summary.eval = r;
    if (!dp.chief()) return;
    std::printf("eval at step %lld (%s, %lld examples, %.1f s): top1 %.4f  top5 %.4f  loss %.4f\n",
                static_cast<long long>(step), setup.eval_split.c_str(), static_cast<long long>(r.num_examples),
                r.seconds, r.top1, r.top5, r.loss);
    std::fflush(stdout);
    EvalLogEntry e;
    e.step = step;
    e.epoch = epoch_of(step);
    e.split = setup.eval_split;
    e.top1 = r.top1;
    e.top5 = r.top5;
    e.loss = r.loss;
    e.num_examples = r.num_examples;
    e.extra = {{"train_seconds", loop_seconds}};  // the step loop's time so far (time to accuracy)
    jsonl->write(e);
    events->add_scalars({{"eval/top1", r.top1}, {"eval/top5", r.top5}, {"eval/loss", r.loss}}, step);
  };
  auto save = [&](int64_t step, double lr) {
    runner->average_state();  // the checkpoint holds the ranks' mean batch-norm statistics
    if (!dp.chief()) return;
    const std::vector<NamedArray> vars = runner->host_variables();
    const std::vector<graph::NamedTensor> shapes = runner->graph().variables();
    std::vector<ckpt::ArrayView> weights;
    for (size_t i = 0; i < vars.size(); ++i)
      weights.push_back(ckpt::f32_view(vars[i].name, shapes[i].value.shape(), vars[i].data.data(), vars[i].data.size()));
    const std::vector<NamedArray> state = runner->export_optimizer_state();
    CheckpointMeta meta;
    meta.set_epoch(step / bpe);
    meta.set_samples_seen(step * global_batch);
    meta.set_samples_in_epoch((step % bpe) * global_batch);
    meta.set_lr_schedule_step(step);
    meta.set_learning_rate(lr);
    meta.set_world_size(dp.world());
    meta.mutable_rng()->set_seed(static_cast<uint64_t>(c.seed()));
    *meta.mutable_config() = c;
    meta.set_model_name(setup.model_name);
    meta.set_optimizer(c.optimizer());
    log_info("saved checkpoint ", ckpt->save(step, weights, ckpt::optimizer_state_views(state), std::move(meta)).prefix);
  };

  auto it = train_ds.make_iterator();
  pipeline::BatchHandle batch;
  Tensor images, labels;
  double lr = schedule.lr_at(0), w_loss = 0, w_wait = 0;
  int64_t loop_images = 0, w_steps = 0, w_correct = 0, w_examples = 0, last_saved = -1;
  Clock::time_point w_start = Clock::now();
  for (int64_t step = 0; step < total; ++step) {
    const auto t0 = Clock::now();
    FASTNN_CHECK(it->next(&batch), "the training pipeline ended early");
    const double wait_local = seconds_since(t0);
    batch_to_tensors(*batch, images, labels);
    lr = schedule.lr_at(step);
    StepResult r = runner->train(images, labels, static_cast<uint64_t>(step), static_cast<float>(lr));
    double wait = wait_local;
    dp.average_metrics(r, wait);  // global loss, accuracy and examples (the gradients went over NCCL)
    check_loss_finite(r.loss, step, lr);
    if (step == 0 && dp.chief())
      if (auto w = first_loss_warning(r.main_loss, setup.num_classes)) log_warn(*w);
    loop_seconds += seconds_since(t0);
    loop_images += r.examples;
    w_loss += r.loss;
    w_wait += wait;
    ++w_steps;
    w_correct += r.correct;
    w_examples += r.examples;
    summary.last_loss = r.loss;
    const int64_t done = step + 1;
    if (logging && dp.chief() && (done % c.log_loss_every_n_iters() == 0 || done == total)) {
      const double wall = seconds_since(w_start);
      TrainLogEntry e;
      e.step = done;
      e.epoch = epoch_of(done);
      e.loss = w_loss / static_cast<double>(w_steps);
      e.accuracy = w_examples ? static_cast<double>(w_correct) / static_cast<double>(w_examples) : 0;
      e.lr = lr;
      e.images_per_sec = wall > 0 ? static_cast<double>(w_examples) / wall : 0;
      e.data_wait_fraction = wall > 0 ? w_wait / wall : 0;
      const StepRunnerStats st = runner->stats();
      if (ro.target.dtype == DType::kF16) e.extra = {{"loss_scale", st.loss_scale}, {"skipped_steps", static_cast<double>(st.skipped_steps)}};
      std::printf("step %lld/%lld  epoch %.2f  loss %.4f  acc %.4f  lr %.5g  %.0f img/s  data wait %.0f%%\n",
                  static_cast<long long>(done), static_cast<long long>(total), e.epoch, e.loss, e.accuracy, lr,
                  e.images_per_sec, 100 * e.data_wait_fraction);
      std::fflush(stdout);
      jsonl->write(e);
      events->add_scalars({{"train/loss", e.loss}, {"train/accuracy", e.accuracy}, {"train/lr", lr},
                          {"train/images_per_sec", e.images_per_sec}, {"train/data_wait_fraction", e.data_wait_fraction}},
                         done);
      w_loss = w_wait = 0;
      w_steps = w_correct = w_examples = 0;
      w_start = Clock::now();
    }
    if (saving && c.save_checkpoints_steps() > 0 && done % c.save_checkpoints_steps() == 0) {
      save(done, lr);
      last_saved = done;
    }
    if (c.eval_every_n_steps() > 0 && done % c.eval_every_n_steps() == 0 && done < total) {
      run_eval(done);
      w_start = Clock::now();  // evaluation time is not training throughput
    }
  }
  batch.reset();
  it.reset();
  if (saving && last_saved != total && total > 0) save(total, lr);
  run_eval(total);
  summary.steps = total;
  summary.train_seconds = loop_seconds;
  summary.images_per_sec = loop_seconds > 0 ? static_cast<double>(loop_images) / loop_seconds : 0;
  summary.rank = dp.rank();
  summary.world_size = dp.world();
  if (events) events->close();
  if (jsonl) jsonl->close();
  return summary;
}

}  // namespace fastnn::loop
