// `fastnn train --config job.pbtxt [--name=value ...]` (or flags alone): every JobConfig field is a
// `--name=value` flag, found by reflection (trainer/config/overrides.h), so CLI11 only knows --config,
// --resume, --overwrite, -q, --json and --help and passes everything else through. The loop: trainer/loop/trainer.h.
// Exit status: 0 when the run reached its last step; 1 on an error; 128 + signal (143 for SIGTERM,
// 130 for SIGINT) when a signal stopped it after saving a checkpoint (docs/TRAINING.md).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "core/logging.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/trainer.h"

namespace fastnn::cli {
namespace {

struct TrainArgs {
  std::string config;
  bool resume = false;
  bool overwrite = false;
  bool quiet = false;
  bool json = false;
  bool help = false;
};

// --json: the summary as one object on stdout (the step lines are in RUN/metrics.jsonl).
void print_json(const loop::TrainSummary& s) {
  nlohmann::json j = {{"run_dir", s.run_dir},       {"first_step", s.first_step},
                      {"step", s.steps},            {"already_finished", s.already_finished},
                      {"train_seconds", s.train_seconds}, {"images_per_sec", s.images_per_sec}};
  if (s.evaluated)
    j["eval"] = {{"top1", s.eval.top1}, {"top5", s.eval.top5}, {"loss", s.eval.loss}, {"num_examples", s.eval.num_examples}};
  if (s.stopped_early) j["stopped_early"] = true;
  if (s.best_step >= 0)
    j["best"] = {{"metric", s.best_metric}, {"value", s.best_value}, {"step", s.best_step},
                 {"checkpoint", s.best_checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.best_checkpoint)}};
  print_json_line(j);
}

void print_help(CLI::App* cmd) {
  std::printf("%s\nJob config fields (in the --config file or as --name=value flags):\n\n%s", cmd->help().c_str(),
              format_config_help(*JobConfig::descriptor()).c_str());
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train a zoo model on a converted dataset (on the GPU when present: --device)");
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->add_option("--config", a->config, "Job config, protobuf text format (schemas/job_config.proto)");
  cmd->add_flag("--resume", a->resume, "Continue from the latest good checkpoint in the run directory, whatever its configuration");
  cmd->add_flag("--overwrite", a->overwrite,
                "Start over in a run directory that holds another run: first remove the files fastnn wrote there "
                "(checkpoints, metrics.jsonl, events, traces), nothing else");
  cmd->add_flag("--quiet,-q", a->quiet, "No step, eval or info lines: warnings, errors and the final summary only");
  cmd->add_flag("--json", a->json, "Print the summary as one JSON object (run_dir, step, images_per_sec, eval) and no "
                "step or eval lines");
  cmd->add_flag("-h,--help", a->help, "Print this help and every job config field");
  cmd->callback([a, cmd] {
    if (a->help) return print_help(cmd);
    const JobConfig config = load_job_config(a->config, cmd->remaining());
    if (a->resume && a->overwrite) throw ConfigError("--resume and --overwrite contradict each other");
    if (a->quiet) set_log_level(LogLevel::kWarn);
    const loop::TrainSummary s = loop::run_training(
        config, {.resume = a->resume, .overwrite = a->overwrite, .progress_lines = !a->quiet && !a->json});
    if (s.stop_signal != 0) {
      if (s.rank == 0)
        std::fprintf(stderr, "fastnn: stopped by signal %d after step %lld (checkpoint saved in %s); continue with --resume\n",
                     s.stop_signal, static_cast<long long>(s.steps), s.run_dir.c_str());
      throw ExitStatus{128 + s.stop_signal};
    }
    if (s.rank != 0) return;  // data-parallel: rank 0 reports for the job
    if (a->json) {
      print_json(s);
      std::fflush(stdout);
      return;
    }
    if (s.stopped_early && s.first_step == s.steps)
      std::printf("%s was stopped early at step %lld: nothing to train (raise early_stopping_patience to continue, "
                  "or --overwrite to start over)\n", s.run_dir.c_str(), static_cast<long long>(s.steps));
    else if (s.stopped_early)
      std::printf("stopped early at step %lld after %lld steps in %.1f s (%.0f img/s), run directory %s\n",
                  static_cast<long long>(s.steps), static_cast<long long>(s.steps - s.first_step), s.train_seconds,
                  s.images_per_sec, s.run_dir.c_str());
    else if (s.already_finished)
      std::printf("%s already reached step %lld: nothing to train (raise stop_at_step or num_epochs to continue, "
                  "or --overwrite to start over)\n", s.run_dir.c_str(), static_cast<long long>(s.steps));
    else
      std::printf("trained %lld steps in %.1f s (%.0f img/s), run directory %s\n",
                  static_cast<long long>(s.steps - s.first_step), s.train_seconds, s.images_per_sec, s.run_dir.c_str());
    if (s.evaluated)
      std::printf("final eval: top1 %.4f  top5 %.4f  loss %.4f  (%lld examples)\n", s.eval.top1, s.eval.top5,
                  s.eval.loss, static_cast<long long>(s.eval.num_examples));
    if (s.best_step >= 0)
      std::printf("best eval: %s %.4f at step %lld%s%s\n", s.best_metric.c_str(), s.best_value,
                  static_cast<long long>(s.best_step), s.best_checkpoint.empty() ? "" : ", checkpoint ",
                  s.best_checkpoint.c_str());
    std::fflush(stdout);
  });
}

}  // namespace fastnn::cli
