// Loading the job config (schemas/job_config.proto): a protobuf text file, then command-line overrides
// (overrides.h), then validation. Field docs: docs/CONFIG.md, `fastnn train --help` (config_fields.h).
//
//   fastnn::JobConfig c = fastnn::load_job_config("job.pbtxt", {"--batch_size=64", "--optimizer=adam"});
//
// Errors are ConfigError (IoError when the file cannot be read), naming the file with line and column,
// or the flag; validation lists every problem it finds, one per line.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schemas/job_config.pb.h"

namespace fastnn {

// Config files larger than this are refused before reading (a config is a few KiB).
inline constexpr size_t kMaxJobConfigBytes = size_t{16} << 20;

// Parses text format. `source` names the text in errors: "job.pbtxt:3:1: Message type
// "fastnn.JobConfig" has no field named "batchsize"; did you mean batch_size?".
JobConfig parse_job_config_text(std::string_view text, const std::string& source);
JobConfig read_job_config_file(const std::string& path);

// Enumerated strings are among their (fastnn.choices); counts, rates and factors are in range;
// piecewise / cosine settings are consistent; hook names are known (field_effects.h). Does not look at
// the file system.
void validate_job_config(const JobConfig& config);

// One line per set field that fastnn accepts for FastNN compatibility but ignores (enable_paisoar,
// protocol).
std::vector<std::string> ignored_field_notices(const JobConfig& config);

// The whole flow: read `path` (none when empty: all defaults), apply `overrides`, validate, log the
// ignored-field notices and the inert-field warnings (field_effects.h) as warnings.
JobConfig load_job_config(const std::string& path, std::span<const std::string> overrides);

// Text format of the fields that are set, for logs and checkpoint metadata; parse_job_config_text
// reads it back to an equal message.
std::string job_config_to_text(const JobConfig& config);

// The examples one rank puts into one optimizer step: batch_size x gradient_accumulation_steps. The train
// pipeline batches this many, and a step counts this many wherever epochs, resume and the learning-rate
// rules count examples; the step runner splits them into batches of batch_size.
int64_t step_batch_size(const JobConfig& config);

// Splits FastNN's comma-separated string fields (train_files, eval_files, hooks); items are trimmed,
// empty items dropped.
std::vector<std::string> split_list(std::string_view comma_separated);

}  // namespace fastnn
