#include "trainer/checkpoint/tf_restore.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/check.h"
#include "core/tf_checkpoint/tf_dtype.h"

namespace fastnn::checkpoint {
namespace {

constexpr const char* kEma = "/ExponentialMovingAverage";
constexpr size_t kListed = 4;  // names listed per kind in the summary

// The kind of a checkpoint tensor that is no model variable, for the summary.
std::string ignored_kind(const std::string& name) {
  static const std::set<std::string> slots = {"Momentum", "RMSProp", "RMSProp_1", "Adam", "Adam_1", "Adagrad",
                                              "Adadelta", "Adadelta_1", "Ftrl", "Ftrl_1", "AdamWeightDecay",
                                              "AdamWeightDecay_1"};
  if (name == "global_step") return "global_step";
  if (name.ends_with(kEma)) return "moving averages";
  const std::string last = name.substr(name.rfind('/') + 1);
  if (slots.count(last) || last == "beta1_power" || last == "beta2_power") return "optimizer slots";
  return "not in the model";
}

const std::string* scope_of(const std::string& name, std::span<const std::string> scopes) {
  for (const std::string& s : scopes)
    if (!s.empty() && name.starts_with(s)) return &s;
  return nullptr;
}

}  // namespace

TfRestore restore_from_tf(const tf_checkpoint::TfCheckpoint& checkpoint, std::span<const TfVariable> variables,
                          const TfRestoreOptions& o) {
  const tf_checkpoint::TfTensorSource& src = *checkpoint.tensors;
  TfRestore out;
  std::set<std::string> used;
  std::map<std::string, int> excluded;  // scope -> variables
  std::vector<std::string> problems, kept_missing;
  int from_ema = 0;
  for (const TfVariable& v : variables) {
    if (const std::string* scope = scope_of(v.name, o.exclude_scopes)) {
      ++excluded[*scope];
      continue;
    }
    const tf_checkpoint::TfTensorInfo* t = o.use_moving_averages ? src.find(v.name + kEma) : nullptr;
    if (t) ++from_ema;
    else t = src.find(v.name);
    const std::string model_shape = str(shape_string(v.tf_shape()), v.layout == TfLayout::kSame ? ""
                                        : str(" in TensorFlow's layout, ", shape_string(v.shape), " in fastnn's"));
    if (!t) {
      if (o.ignore_missing_vars) kept_missing.push_back(v.name);
      else problems.push_back(str(v.name, ": not in the checkpoint (the model's is ", model_shape, ")"));
      continue;
    }
    used.insert(t->name);
    if (!v.accepts_tf_shape(t->shape)) {
      problems.push_back(str(t->name, ": ", shape_string(t->shape), " in the checkpoint, the model's is ", model_shape));
      continue;
    }
    const auto dtype = tf_checkpoint::tf_to_array_dtype(t->dtype);
    if (!dtype || (*dtype != DType::kF32 && *dtype != DType::kF16 && *dtype != DType::kBF16)) {
      problems.push_back(str(t->name, ": ", tf_checkpoint::tf_dtype_name(t->dtype), " in the checkpoint, not floating point"));
      continue;
    }
    const std::vector<float> tf_values = to_f32(src.read(t->name).view());
    NamedArray a{v.name, std::vector<float>(tf_values.size())};
    tf_to_fastnn(v, tf_values.data(), a.data.data());
    out.values.push_back(std::move(a));
  }
  if (!problems.empty()) {
    std::string list;
    for (const std::string& p : problems) list += "\n  " + p;
    throw ConfigError(str(checkpoint.describe(), ": ", problems.size(), " model variable(s) cannot be restored:", list,
                          "\nAs with TF-slim, exclude their scopes to re-initialise them (checkpoint_exclude_scopes, "
                          "e.g. a classifier for another number of classes), or set ignore_missing_vars to keep "
                          "the initial values of variables the checkpoint lacks."));
  }
  std::string s = str("restored ", out.values.size(), " variables from ", checkpoint.describe());
  if (o.use_moving_averages) s += str(" (", from_ema, " from their moving averages)");
  for (const auto& [scope, n] : excluded) s += str("\n  excluded by scope '", scope, "', initialised: ", n, " variables");
  if (!kept_missing.empty()) {
    s += str("\n  not in the checkpoint, initialised (ignore_missing_vars): ", kept_missing.size(), " variables:");
    for (size_t i = 0; i < kept_missing.size() && i < kListed; ++i) s += " " + kept_missing[i];
    if (kept_missing.size() > kListed) s += " ...";
  }
  // Ignored: what no variable was restored from, leaving out the model's own names (excluded, or
  // replaced by their moving averages) and, when averages are used, the averages of excluded ones.
  std::set<std::string> model;
  for (const TfVariable& v : variables) model.insert(v.name);
  std::map<std::string, std::vector<std::string>> ignored;
  for (const tf_checkpoint::TfTensorInfo& t : src.tensors()) {
    const bool average_of_model = t.name.ends_with(kEma) && model.count(t.name.substr(0, t.name.size() - std::string(kEma).size()));
    if (used.count(t.name) || model.count(t.name) || (o.use_moving_averages && average_of_model)) continue;
    ignored[ignored_kind(t.name)].push_back(t.name);
  }
  for (const auto& [kind, names] : ignored) {
    s += str("\n  ignored, ", kind, ": ", names.size(), " tensors:");
    for (size_t i = 0; i < names.size() && i < kListed; ++i) s += " " + names[i];
    if (names.size() > kListed) s += " ...";
  }
  out.summary = s;
  return out;
}

}  // namespace fastnn::checkpoint
