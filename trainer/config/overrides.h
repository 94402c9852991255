// Command-line overrides of a config message, found by protobuf reflection (no flag table):
//
//   --name=value     any scalar field; a repeated field takes a comma-separated list (replacing it;
//                    `--name=` empties it); `--name=` on a scalar clears it back to unset/default
//   --name value     the same, for non-bool fields (the next argument is the value)
//   --name           bool fields: true;   --noname: false (as absl/TF flags)
//   '-' in a name is '_': --batch-size=64 is --batch_size=64 (every fastnn command takes both)
//   --alias=value    a field's other names ((fastnn.alias): TF-slim's --train_dir, --max_number_of_steps,
//                    timm's --lr, --epochs...) set it alike; a complement alias sets 1 - value
//                    (--bn_momentum=0.01 is --batch_norm_decay=0.99)
//
// Values: bool true/false/1/0 (any case); ints in decimal, range-checked for int32; floats as strtod
// reads them; strings as given. Fields with (fastnn.choices) only take one of their choices.
// Errors are UsageError (the CLI's exit 2) naming the flag: an unknown name suggests the closest field names
// ("did you mean --learning_rate?") and points at `fastnn train --help`; a bad value names the
// field, its type and, for enumerated strings, the valid choices. Message fields cannot be set here.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

namespace fastnn {

// Sets field `name` of `msg` from its command-line text (the part after '=').
void set_field_from_text(google::protobuf::Message& msg, std::string_view name, std::string_view value);

// Applies argv-style overrides in order (later ones win). Every argument must be a flag.
void apply_overrides(google::protobuf::Message& msg, std::span<const std::string> args);

}  // namespace fastnn
