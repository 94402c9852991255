// The comparison page of `fastnn report RUN_A RUN_B ...`: one self-contained HTML file (core/report/)
// that sets runs side by side, as timm users do with several output folders and Lightning users with
// TensorBoard's run selector.
//
// Sections: "runs" (one row per run: model, last step, last and best evaluation, median throughput),
// "curves" (training loss, training accuracy, learning rate, evaluation top-1 and loss against the step,
// one line per run, overlaid), "hyperparameters" (the job config fields whose values differ between the
// runs, one column per run; the fields every run shares are only counted) and "notes". Every number is
// also in the JSON block (`kind` "fastnn-run-comparison", docs/REPORTS.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainer/metrics/run_report.h"

namespace fastnn {

struct ComparedRun {
  std::string run_dir;
  std::string model_name;  // "" when unknown
  RunMetrics metrics;
  // The run's job config, field name → value as text (defaults included); empty when no checkpoint
  // recorded it.
  std::map<std::string, std::string> config;
};

// The fields whose values differ between the runs that recorded a config, in name order. Fields that
// always differ between two runs and say nothing about the recipe (output_dir and its aliases) are left out.
std::vector<std::string> differing_config_fields(const std::vector<ComparedRun>& runs);

std::string run_comparison_page(const std::vector<ComparedRun>& runs, const std::vector<std::string>& notes);

}  // namespace fastnn
