// What a config message says about its own fields, read by protobuf reflection from the schema and its
// custom field options (schemas/job_config.proto: (fastnn.help), (fastnn.choices), (fastnn.section),
// (fastnn.default_text)). This is the only description of the fields: --help, docs/CONFIG.md (kept in
// sync by a test) and the error messages all come from here.
//
// Works on any message type; JobConfig is the one with the options filled in.
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

namespace fastnn {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::string field_help(const FieldDescriptor& field);
std::vector<std::string> field_choices(const FieldDescriptor& field);
// The section title a field opens, or "".
std::string field_section(const FieldDescriptor& field);
// Other command-line names of the field ((fastnn.alias): TF-slim's and timm's flag names), and the name
// whose value is 1 - the field's ((fastnn.complement_alias), "" when none).
std::vector<std::string> field_aliases(const FieldDescriptor& field);
std::string field_complement_alias(const FieldDescriptor& field);
// The field a command-line name means: its own name or an alias (complement: the value is 1 - given).
struct FieldByName {
  const FieldDescriptor* field = nullptr;
  bool complement = false;
};
FieldByName find_field(const Descriptor& type, std::string_view name);

// "int", "float", "bool", "string", "message"; repeated fields: "int list", "float list"...
std::string field_type_name(const FieldDescriptor& field);
// The default as a user would write it: 0.01, true, "mock" (strings quoted), or (fastnn.default_text);
// repeated fields: "[]".
std::string field_default_text(const FieldDescriptor& field);
// The valid choices joined for a message: `adam, sgd` or `"", luong234` (empty shown as "").
std::string format_choices(const std::vector<std::string>& choices);

// Field names of `type` closest to `name` by edit distance (at most `max_results`, nearest first);
// names containing `name`, or contained in it, also count as close. Empty when nothing is close.
std::vector<std::string> closest_field_names(const Descriptor& type, std::string_view name,
                                             size_t max_results = 3);
// The same rule over any list of names (hook names, scopes).
std::vector<std::string> closest_names(std::span<const std::string> candidates, std::string_view name,
                                       size_t max_results = 3);

// The --help text: every field in declaration order under its section, with type, default, choices
// and help, e.g.
//   --learning_rate=<float>   default 0.01
//       Initial learning rate.
std::string format_config_help(const Descriptor& type);

// docs/CONFIG.md's field tables: "### <section>" headers, then one row per field,
//   | `learning_rate` | float | 0.01 | Initial learning rate. |
// Each row is one line; the docs test checks that every row appears in docs/CONFIG.md verbatim.
std::string config_fields_markdown(const Descriptor& type);
std::vector<std::string> config_markdown_rows(const Descriptor& type);

// Every field of `config` by name -> its value as text (defaults included; repeated fields as
// "[a, b]"), the fields named in `excluded` left out. The one view of a config that the ranks' check,
// the run directory's "same run?" check and `fastnn report`'s comparison of runs compare.
std::map<std::string, std::string> config_field_values(const google::protobuf::Message& config,
                                                       const std::set<std::string>& excluded);

}  // namespace fastnn
