// `fastnn eval [--config job.pbtxt] [--name=value ...] [--checkpoint PATH] [--json] [-q]`: evaluates a
// checkpoint (default: the latest in the run directory) on the whole held-out split.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "core/logging.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/field_effects.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/trainer.h"

namespace fastnn::cli {
namespace {

struct EvalArgs {
  std::string config, checkpoint;
  bool json = false;
  bool quiet = false;
  bool help = false;
};

}  // namespace

void add_eval_command(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint on the held-out split: top-1, top-5, loss");
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->add_option("--config", a->config, "Job config, protobuf text format (schemas/job_config.proto)");
  cmd->add_option("--checkpoint,--checkpoint_path", a->checkpoint,
                  "Checkpoint prefix, file or directory (default: latest in the run directory); --checkpoint_path is "
                  "TF-slim eval_image_classifier's name");
  cmd->add_flag("--json", a->json, "Print one JSON object: top1, top5, loss, num_examples, step, checkpoint, confusion_matrix (rows: true "
                "class, columns: predicted; up to 256 classes), misclassified (the most confident mistakes: file, record, offset, label, predicted, confidence)");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress or info lines on stderr (warnings and errors stay)");
  cmd->add_flag("-h,--help", a->help, "Print this help and every job config field");
  cmd->callback([a, cmd] {
    if (a->help) {
      std::printf("%s\nJob config fields:\n\n%s", cmd->help().c_str(), format_config_help(*JobConfig::descriptor()).c_str());
      return;
    }
    if (a->quiet) set_log_level(LogLevel::kWarn);
    const JobConfig config = load_job_config(a->config, cmd->remaining());
    for (const std::string& w : eval_ignored_flags(cmd->remaining())) log_warn(w);
    const loop::CheckpointEval e = loop::evaluate_checkpoint(config, a->checkpoint);
    const loop::EvalResult& r = e.result;
    if (a->json) {
      nlohmann::json j = {{"top1", r.top1}, {"top5", r.top5}, {"loss", r.loss}, {"num_examples", r.num_examples},
                          {"step", e.step}, {"checkpoint", e.checkpoint}};
      // The same rows as metrics.jsonl's eval lines (trainer/metrics/jsonl_writer.h): [true][predicted].
      if (r.confusion_classes > 0) {
        const size_t c = static_cast<size_t>(r.confusion_classes);
        for (size_t i = 0; i < c; ++i)
          j["confusion_matrix"].push_back(std::vector<int64_t>(r.confusion.begin() + i * c, r.confusion.begin() + (i + 1) * c));
      }
      if (!r.misclassified.empty()) j["misclassified"] = misclassified_json(r.misclassified);
      print_json_line(j);
    } else {
      std::printf("%s (step %lld): top1 %.4f  top5 %.4f  loss %.4f  on %lld examples (%.1f s)\n", e.checkpoint.c_str(),
                  static_cast<long long>(e.step), r.top1, r.top5, r.loss, static_cast<long long>(r.num_examples),
                  r.seconds);
    }
    std::fflush(stdout);
  });
}

}  // namespace fastnn::cli
