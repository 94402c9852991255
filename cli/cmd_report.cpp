// `fastnn report RUN_DIR... [--output FILE.html] [--overwrite] [--dataset_dir DIR] [-q|--json]`: the run's picture
// page (loss, accuracy, learning-rate and throughput curves; the last evaluation's confusion matrix
// and per-class accuracy) from RUN_DIR/metrics.jsonl, as one self-contained HTML file (default
// RUN_DIR/report.html). The page: trainer/metrics/run_report.h. Several run directories: one page comparing
// them (trainer/metrics/run_comparison.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "core/check.h"
#include "core/dataset_files.h"
#include "core/logging.h"
#include "core/report/page_file.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/config/config_fields.h"
#include "trainer/metrics/run_comparison.h"
#include "trainer/metrics/run_report.h"

namespace fastnn::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> run_dirs;
  std::string run_dir, output, dataset_dir;
  bool overwrite = false, quiet = false, json = false;
};

// Model and dataset from the latest checkpoint's metadata, class names from the dataset's labels.txt
// (or manifest); each only where it can be found, with a note saying what was not.
void describe_run(const ReportArgs& a, RunReportInfo* info) {
  std::string dataset = a.dataset_dir;
  try {
    const std::vector<checkpoint::CheckpointInfo> ckpts = checkpoint::list_committed_latest_first(a.run_dir);
    if (!ckpts.empty()) {
      const CheckpointMeta meta = checkpoint::read_checkpoint_meta(checkpoint::meta_path(ckpts.front().prefix));
      info->model_name = meta.model_name();
      if (dataset.empty() && meta.has_config()) dataset = meta.config().dataset_dir();
    }
  } catch (const Error& e) {
    info->notes.push_back(str("checkpoint metadata not read (model and dataset unknown): ", e.what()));
  }
  info->dataset_dir = dataset;
  if (dataset.empty()) {
    info->notes.push_back("class names: no dataset known (no checkpoint; give --dataset_dir)");
    return;
  }
  try {
    if (auto labels = read_labels_in(dataset)) info->class_names = *labels;
    else info->notes.push_back(str("class names: no labels.txt in ", dataset, "; classes are shown by number"));
  } catch (const Error& e) {
    info->notes.push_back(str("class names: ", e.what()));
  }
}

// `fastnn report RUN_A RUN_B ...`: the comparison page (trainer/metrics/run_comparison.h). Each run's
// config comes from its latest checkpoint; a run without one is compared by its curves only.
void compare_runs(const ReportArgs& a) {
  if (a.output.empty())
    throw UsageError(str("comparing ", a.run_dirs.size(), " runs: name the page with -o FILE.html"));
  std::vector<ComparedRun> runs;
  std::vector<std::string> notes;
  for (const std::string& dir : a.run_dirs) {
    ComparedRun r;
    r.run_dir = dir;
    r.metrics = read_run_metrics(dir + "/metrics.jsonl");
    try {
      const std::vector<checkpoint::CheckpointInfo> ckpts = checkpoint::list_committed_latest_first(dir);
      if (!ckpts.empty()) {
        const CheckpointMeta meta = checkpoint::read_checkpoint_meta(checkpoint::meta_path(ckpts.front().prefix));
        r.model_name = meta.model_name();
        if (meta.has_config()) r.config = config_field_values(meta.config(), {});
      }
    } catch (const Error& e) {
      notes.push_back(str(dir, ": checkpoint metadata not read: ", e.what()));
    }
    runs.push_back(std::move(r));
  }
  report::write_page_file(a.output, run_comparison_page(runs, notes), a.overwrite);
  const std::vector<std::string> fields = differing_config_fields(runs);
  if (a.json)
    return print_json_line(nlohmann::ordered_json{{"output", a.output}, {"runs", a.run_dirs},
                                                  {"differing_fields", fields}, {"notes", notes}});
  if (a.quiet) return;
  std::printf("report written to %s (%zu runs; %zu hyperparameter(s) differ%s%s)\n", a.output.c_str(), runs.size(),
              fields.size(), fields.empty() ? "" : ": ", [&] {
                std::string list;
                for (size_t i = 0; i < fields.size() && i < 8; ++i) list += (i ? ", " : "") + fields[i];
                return fields.size() > 8 ? list + ", ..." : list;
              }().c_str());
  std::fflush(stdout);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write a run's picture page: loss, accuracy, learning-rate and throughput curves and the last "
                "evaluation's confusion matrix and per-class accuracy, from RUN_DIR/metrics.jsonl, as one "
                "self-contained HTML file; several run directories: one page comparing them");
  cmd->add_option("run_dir", a->run_dirs,
                  "The run directory (train's --output_dir); several: a page comparing them (curves overlaid, the "
                  "hyperparameters that differ)")
      ->required();
  cmd->add_option("--output,-o", a->output,
                  "The HTML file to write (default RUN_DIR/report.html; required when comparing runs)");
  cmd->add_flag("--overwrite", a->overwrite, "Replace an existing output file that is not a page fastnn wrote (its own pages are "
                "replaced anyway)");
  cmd->add_option("--dataset_dir,--dataset-dir", a->dataset_dir,
                  "Where labels.txt is, for class names (default: the dataset the run's checkpoint names)");
  cmd->add_flag("--quiet,-q", a->quiet, "Print nothing when the page is written");
  cmd->add_flag("--json", a->json,
                "Print one JSON object: output, train_lines, evaluations, confusion_matrix, notes (comparing: output, "
                "runs, differing_fields, notes)");
  cmd->callback([a] {
    if (a->run_dirs.size() > 1) return compare_runs(*a);
    a->run_dir = a->run_dirs.front();
    const RunMetrics m = read_run_metrics(a->run_dir + "/metrics.jsonl");
    RunReportInfo info;
    info.run_dir = a->run_dir;
    describe_run(*a, &info);
    const std::string out = a->output.empty() ? a->run_dir + "/report.html" : a->output;
    report::write_page_file(out, run_report_page(m, info), a->overwrite);
    if (a->json)
      return print_json_line(nlohmann::ordered_json{{"output", out}, {"train_lines", m.train_step.size()},
                                                    {"evaluations", m.evals.size()},
                                                    {"confusion_matrix", m.confusion_classes > 0}, {"notes", info.notes}});
    if (a->quiet) return;
    std::printf("report written to %s (%zu train lines, %zu evaluations%s)\n", out.c_str(), m.train_step.size(),
                m.evals.size(), m.confusion_classes ? ", confusion matrix" : "");
    std::fflush(stdout);
  });
}

}  // namespace fastnn::cli
