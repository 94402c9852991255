// No flag silently does nothing: the job-config fields that a given config makes inert, said by name.
//
// A field set explicitly (has_*) whose value the run would never read because of another field's value
// gets one warning line naming it, why, and what would make it count, e.g.
//   "num_epochs_per_decay=4 has no effect: it sets the decay interval of decay_scheme epochs only
//    (decay_scheme is \"\"; ...)"
// Rules that need the device or the world size are in trainer/loop/capabilities.h; rules that need the
// dataset are in run_setup. Fields left at their defaults are never warned about (a FastNN user's full
// flag list stays quiet where it matches the defaults).
//
// Hook names (the `hooks` field) are FastNN's four; any other name is a ConfigError with a did-you-mean.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schemas/job_config.pb.h"

namespace fastnn {

inline constexpr std::array<std::string_view, 4> kHookNames = {"StopAtStepHook", "ProfilerHook", "LoggingTensorHook",
                                                                "CheckpointSaverHook"};

// Every name in `hooks` is one of kHookNames; else ConfigError listing them ("did you mean ...?").
void validate_hooks(const JobConfig& config);

// One line per explicitly set field this config leaves without effect (the rules above).
std::vector<std::string> inert_field_warnings(const JobConfig& config);

// `fastnn eval` reads only the fields that choose the data, the model, the batches and the device; one
// warning per command-line flag (--name=value, --name value, --name, --noname) naming another field,
// e.g. "--learning_rate has no effect on eval: it evaluates a checkpoint; the field is for training".
std::vector<std::string> eval_ignored_flags(std::span<const std::string> args);

// The start checkpoint of a fine-tune, "" for none: checkpoint_path, else model_dir[/ckpt_file_name]
// for task_type finetune.
std::string start_checkpoint(const JobConfig& config);

}  // namespace fastnn
