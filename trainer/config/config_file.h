// Reading a job config file in the format its user wrote it in:
//   *.yaml, *.yml  a flat YAML mapping `field: value` (timm's args.yaml habit; lists as YAML sequences)
//   *.json         a flat JSON object {"field": value}
//   anything else  protobuf text format (schemas/job_config.proto), FastNN's and SINGA's habit
// YAML and JSON keys go through the command line's reflection (overrides.h), so a key is a field name
// or one of its aliases (train_dir, lr, epochs...) and a value is checked as a flag's is. A nested
// mapping (PLSC's sectioned YAML, the `net` message) is refused naming the key: only protobuf text
// format can hold a net. null values leave a field at its default.
// A file of another extension that is not protobuf text format but reads whole as flat JSON or YAML
// (`model_name: lenet`, which text format refuses for want of quotes) is read as such, and the log says
// so; otherwise the text-format error stands (it names the line and suggests field names).
// Errors: ConfigError / UsageError naming the file (and the key or line); IoError when it cannot be read.
#pragma once

#include <string>

#include "schemas/job_config.pb.h"

namespace fastnn {

JobConfig read_config_file(const std::string& path);

}  // namespace fastnn
