#include "trainer/config/config_file.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/input_file.h"
#include "core/logging.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/job_config.h"
#include "trainer/config/overrides.h"

namespace fastnn {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The keys of one file: each set from its text (errors prefixed with the file and key); unknown keys
// are collected and refused together, so a file written for another tool (timm's args.yaml) is
// answered with the whole list at once.
class KeySetter {
 public:
  KeySetter(JobConfig& c, std::string path) : c_(c), path_(std::move(path)) {}
  void set(const std::string& key, const std::string& value) {
    if (!find_field(*JobConfig::descriptor(), key).field) return unknown_.push_back(key);
    try {
      set_field_from_text(c_, key, value);
    } catch (const UsageError& e) {
      throw UsageError(str(path_, ": key '", key, "': ", e.what()));
    }
  }
  void finish() const {
    if (unknown_.empty()) return;
    std::string list;
    for (size_t i = 0; i < unknown_.size() && i < 12; ++i) {
      list += (i ? ", " : "") + unknown_[i];
      if (const auto near = closest_field_names(*JobConfig::descriptor(), unknown_[i], 1); !near.empty())
        list += " (" + near[0] + "?)";
    }
    if (unknown_.size() > 12) list += str(", ... (", unknown_.size(), " in all)");
    throw UsageError(str(path_, ": ", unknown_.size(), " key(s) that are not job config fields: ", list,
                         " (`fastnn train --help` lists every field and its other names)"));
  }

 private:
  JobConfig& c_;
  std::string path_;
  std::vector<std::string> unknown_;
};

JobConfig from_json(const std::string& path, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(str(path, ": not valid JSON: ", e.what()));
  }
  if (!j.is_object()) throw ConfigError(str(path, ": a JSON job config is one object {\"field\": value, ...}"));
  JobConfig c;
  KeySetter keys(c, path);
  for (const auto& [key, v] : j.items()) {
    if (v.is_null()) continue;
    if (v.is_object()) throw ConfigError(str(path, ": key '", key, "' holds an object; a JSON config is flat (only protobuf text format holds a net)"));
    std::string text;
    if (v.is_array()) {
      for (const auto& e : v) text += (text.empty() ? "" : ",") + (e.is_string() ? e.get<std::string>() : e.dump());
    } else {
      text = v.is_string() ? v.get<std::string>() : v.dump();
    }
    keys.set(key, text);
  }
  keys.finish();
  return c;
}

JobConfig from_yaml(const std::string& path, const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(str(path, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  JobConfig c;
  if (root.IsNull()) return c;
  if (!root.IsMap()) throw ConfigError(str(path, ": a YAML job config is a mapping of `field: value` lines"));
  KeySetter keys(c, path);
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    const int line = kv.first.Mark().line + 1;
    if (v.IsNull()) continue;
    if (v.IsMap())
      throw ConfigError(str(path, ":", line, ": key '", key, "' holds a mapping; fastnn reads flat YAML (`field: value`), "
                            "not sectioned configs such as PLSC's: write the fields at the top level (docs/CONFIG.md)"));
    std::string value;
    if (v.IsSequence()) {
      for (const auto& e : v) {
        if (!e.IsScalar()) throw ConfigError(str(path, ":", line, ": key '", key, "': a list of lists"));
        value += (value.empty() ? "" : ",") + e.as<std::string>();
      }
    } else {
      value = v.as<std::string>();
    }
    keys.set(key, value);
  }
  keys.finish();
  return c;
}

// Protobuf text format failed: a file that reads whole as flat JSON or YAML is taken as such (said in
// the log); otherwise nullopt, and the text-format error stands.
std::optional<JobConfig> as_other_format(const std::string& path, const std::string& text) {
  try {
    if (nlohmann::json::accept(text)) {
      JobConfig c = from_json(path, text);
      log_info(path, " is not protobuf text format; read as JSON");
      return c;
    }
    const YAML::Node n = YAML::Load(text);
    if (!n.IsMap() || n.size() == 0) return std::nullopt;
    JobConfig c = from_yaml(path, text);
    log_info(path, " is not protobuf text format; read as YAML (`field: value`)");
    return c;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

JobConfig read_config_file(const std::string& path) {
  const std::string text = read_regular_file(path, kMaxJobConfigBytes);
  if (ends_with(path, ".yaml") || ends_with(path, ".yml")) return from_yaml(path, text);
  if (ends_with(path, ".json")) return from_json(path, text);
  try {
    return parse_job_config_text(text, path);
  } catch (const ConfigError&) {
    if (std::optional<JobConfig> c = as_other_format(path, text)) return *c;
    throw;
  }
}

}  // namespace fastnn
