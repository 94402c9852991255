#include "trainer/config/field_effects.h"

#include <algorithm>

#include <google/protobuf/text_format.h>

#include "core/check.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/job_config.h"

namespace fastnn {
namespace {

const FieldDescriptor& field(const char* name) {
  const FieldDescriptor* f = JobConfig::descriptor()->FindFieldByName(name);
  FASTNN_CHECK(f != nullptr, "field_effects: no field ", name);
  return *f;
}

bool is_set(const JobConfig& c, const char* name) {
  const FieldDescriptor& f = field(name);
  return f.is_repeated() ? c.GetReflection()->FieldSize(c, &f) > 0 : c.GetReflection()->HasField(c, &f);
}

// "name=value" as the user wrote it (strings quoted, lists joined).
std::string shown(const JobConfig& c, const char* name) {
  const FieldDescriptor& f = field(name);
  std::string values;
  if (!f.is_repeated()) google::protobuf::TextFormat::PrintFieldValueToString(c, &f, -1, &values);
  for (int i = 0; f.is_repeated() && i < c.GetReflection()->FieldSize(c, &f); ++i) {
    std::string v;
    google::protobuf::TextFormat::PrintFieldValueToString(c, &f, i, &v);
    values += (i ? "," : "") + v;
  }
  return str(name, "=", values);
}

bool has_hook(const JobConfig& c, std::string_view hook) {
  const std::vector<std::string> hooks = split_list(c.hooks());
  return std::find(hooks.begin(), hooks.end(), hook) != hooks.end();
}

struct Warnings {
  const JobConfig& c;
  std::vector<std::string> out;
  // Warns when `name` is set and `inert`: "<name=value> has no effect: <why>".
  template <typename... Why>
  void when(const char* name, bool inert, Why&&... why) {
    if (inert && is_set(c, name)) out.push_back(str(shown(c, name), " has no effect: ", std::forward<Why>(why)...));
  }
};

// Which optimizers read each optimizer hyperparameter (trainer/optim/factory.cpp).
struct OptimizerField {
  const char* field;
  std::vector<std::string_view> optimizers;
};

const std::vector<OptimizerField>& optimizer_fields() {
  static const std::vector<OptimizerField> table = {
      {"adadelta_rho", {"adadelta"}},
      {"adagrad_initial_accumulator_value", {"adagrad"}},
      {"adam_beta1", {"adam", "adamweightdecay", "adamw", "lamb"}},
      {"adam_beta2", {"adam", "adamweightdecay", "adamw", "lamb"}},
      {"opt_epsilon", {"adadelta", "adam", "rmsprop", "adamweightdecay", "adamw", "lamb"}},
      {"ftrl_learning_rate_power", {"ftrl"}},
      {"ftrl_initial_accumulator_value", {"ftrl"}},
      {"ftrl_l1", {"ftrl"}},
      {"ftrl_l2", {"ftrl"}},
      {"momentum", {"momentum", "lars"}},
      {"lars_eeta", {"lars"}},
      {"lars_epsilon", {"lars"}},
      {"use_nesterov", {"momentum"}},
      {"rmsprop_momentum", {"rmsprop"}},
      {"rmsprop_decay", {"rmsprop"}},
      {"adam_weight_decay_rate", {"adamweightdecay"}},
  };
  return table;
}

std::string joined(const std::vector<std::string_view>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += str(i ? (i + 1 == names.size() ? " or " : ", ") : "", names[i]);
  return s;
}

}  // namespace

void validate_hooks(const JobConfig& c) {
  const std::vector<std::string> valid(kHookNames.begin(), kHookNames.end());
  for (const std::string& h : split_list(c.hooks())) {
    if (std::find(valid.begin(), valid.end(), h) != valid.end()) continue;
    const std::vector<std::string> near = closest_names(valid, h, 1);
    throw ConfigError(str("hooks: unknown hook \"", h, "\"", near.empty() ? "" : str("; did you mean ", near[0], "?"),
                          " (the hooks are ", format_choices(valid), ")"));
  }
}

std::vector<std::string> eval_ignored_flags(std::span<const std::string> args) {
  static const std::vector<std::string_view> read = {
      "dataset_name", "dataset_dir", "file_pattern", "train_files", "eval_files", "num_classes", "labels_offset",
      "train_image_size", "preprocessing_name", "input_mean", "input_std", "crop_pct", "num_parallel_batches", "prefetch_buffer_size", "num_preprocessing_threads",
      "task_type", "model_name", "batch_size", "model_dir", "output_dir", "device", "precision", "use_fp16",
      "input_dtype", "conv_search", "conv_pad_channels", "depthwise_conv", "conv_api", "fuse_conv_bn", "fuse_ops", "cuda_graph", "data_format", "deterministic", "net", "enable_paisoar", "protocol",
      "dataset_split_name", "aux_logits", "batch_norm_epsilon"};
  const Descriptor& type = *JobConfig::descriptor();
  std::vector<std::string> out;
  for (const std::string& a : args) {
    if (!a.starts_with("--")) continue;  // a value
    std::string name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
    std::replace(name.begin(), name.end(), '-', '_');
    if (!find_field(type, name).field && name.starts_with("no")) name = name.substr(name.starts_with("no_") ? 3 : 2);
    const FieldDescriptor* f = find_field(type, name).field;  // --train_dir is output_dir
    if (f == nullptr) continue;  // apply_overrides has refused it already
    name = f->name();
    if (std::find(read.begin(), read.end(), name) == read.end())
      out.push_back(str("--", name, " has no effect on eval: it evaluates a checkpoint, and ", name,
                        " is a training field"));
  }
  return out;
}

std::string start_checkpoint(const JobConfig& c) {
  if (!c.checkpoint_path().empty()) return c.checkpoint_path();
  if (c.task_type() == "finetune" && !c.model_dir().empty())
    return c.ckpt_file_name().empty() ? c.model_dir() : c.model_dir() + "/" + c.ckpt_file_name();
  return "";
}

std::vector<std::string> inert_field_warnings(const JobConfig& c) {
  Warnings w{c, {}};

  // Optimizer hyperparameters of other optimizers.
  for (const OptimizerField& f : optimizer_fields()) {
    const bool used = std::find(f.optimizers.begin(), f.optimizers.end(), c.optimizer()) != f.optimizers.end();
    w.when(f.field, !used, "optimizer is ", c.optimizer(), "; only ", joined(f.optimizers), " read it");
  }

  // Learning rate: what each decay type and decay_scheme read (trainer/schedule/lr_schedule.h).
  const std::string& type = c.learning_rate_decay_type();
  const std::string& scheme = c.decay_scheme();
  const bool by_scheme = type == "exponential" || type == "polynomial";
  const std::string no_scheme =
      "decay_scheme is \"\", and without one exponential and polynomial never decay (FastNN's semantics); set "
      "decay_scheme=epochs (TF-slim: every num_epochs_per_decay epochs), after_warmup or luong234 / luong5 / luong10";
  if (by_scheme && scheme.empty() && is_set(c, "learning_rate_decay_type"))
    w.out.push_back(str("learning_rate_decay_type=", type, " keeps the rate constant: ", no_scheme));
  w.when("learning_rate_decay_factor", type != "exponential",
         "it is the factor of learning_rate_decay_type exponential, which is ", type);
  w.when("learning_rate_decay_factor", type == "exponential" && scheme.empty(), no_scheme);
  w.when("num_epochs_per_decay", scheme != "epochs" || !by_scheme,
         "it sets the decay interval of decay_scheme epochs with learning_rate_decay_type exponential or polynomial "
         "(decay_scheme is \"", scheme, "\", learning_rate_decay_type ", type, ")");
  w.when("num_sample_per_epoch", scheme != "epochs" || !by_scheme,
         "it is the epoch length of decay_scheme epochs only; num_epochs and the logged epoch count the train "
         "split's records");
  w.when("end_learning_rate", type != "polynomial", "it is the final rate of learning_rate_decay_type polynomial, "
         "which is ", type);
  w.when("end_learning_rate", type == "polynomial" && scheme.empty(), no_scheme);
  w.when("polynomial_decay_power", type != "polynomial",
         "it is the power of learning_rate_decay_type polynomial, which is ", type);
  w.when("polynomial_decay_power", type == "polynomial" && scheme.empty(), no_scheme);
  w.when("decay_scheme", !scheme.empty() && (type == "fixed" || type == "piecewise"),
         "learning_rate_decay_type ", type, " does not read it (exponential and polynomial do)");
  w.when("min_lr_ratio", type != "cosine", "it is the final fraction of learning_rate_decay_type cosine, which is ",
         type);
  w.when("lr_boundaries", type != "piecewise", "learning_rate_decay_type is ", type, ", not piecewise");
  w.when("lr_values", type != "piecewise", "learning_rate_decay_type is ", type, ", not piecewise");
  w.when("learning_rate", type == "piecewise", "learning_rate_decay_type piecewise takes its rates from lr_values");
  w.when("warmup_steps", type == "fixed", "learning_rate_decay_type fixed has no warmup (FastNN's semantics)");
  w.when("warmup_scheme", c.warmup_steps() == 0 || type == "fixed",
         type == "fixed" ? "learning_rate_decay_type fixed has no warmup" : "warmup_steps is 0");

  // Mixup / CutMix (pipeline/mixup.h): the probabilities and the cut-off act only on a mixing run.
  const bool mixing = c.mixup_alpha() > 0 || c.cutmix_alpha() > 0;
  for (const char* f : {"mixup_prob", "mixup_off_epoch"})
    w.when(f, !mixing, "mixup_alpha and cutmix_alpha are 0 (no batch is mixed)");
  w.when("mixup_switch_prob", !(c.mixup_alpha() > 0 && c.cutmix_alpha() > 0),
         "it chooses between mixup and CutMix, and only one of mixup_alpha, cutmix_alpha is > 0");

  // NASNet / PNASNet hparams (trainer/zoo/nasnet.cpp); a net {} of its own has its drop_path layers' values.
  const bool nas = !c.has_net() && c.model_name().find("nasnet_") != std::string::npos;
  w.when("drop_path_keep_prob", !nas, "only the zoo's nasnet_* / pnasnet_* models have drop-path (model_name is ",
         c.has_net() ? "a net {} of its own" : c.model_name(), ")");
  w.when("total_training_steps", !nas, "only the zoo's nasnet_* / pnasnet_* models have drop-path (model_name is ",
         c.has_net() ? "a net {} of its own" : c.model_name(), ")");

  // Hooks and the fields only they read.
  w.when("log_loss_every_n_iters", !has_hook(c, "LoggingTensorHook"), "hooks does not name LoggingTensorHook");
  w.when("profile_every_n_iters", !has_hook(c, "ProfilerHook") && c.profile_every_n_iters() > 0,
         "hooks does not name ProfilerHook");
  w.when("profile_at_task", c.profile_every_n_iters() == 0 || !has_hook(c, "ProfilerHook"),
         "nothing is profiled (profile_every_n_iters is 0 or hooks lacks ProfilerHook)");
  w.when("save_checkpoints_steps", !has_hook(c, "CheckpointSaverHook"), "hooks does not name CheckpointSaverHook");
  w.when("keep_checkpoint_max", !has_hook(c, "CheckpointSaverHook"), "hooks does not name CheckpointSaverHook");
  if (is_set(c, "hooks") && !has_hook(c, "StopAtStepHook"))
    w.out.push_back(str("hooks without StopAtStepHook: training still stops at stop_at_step / num_epochs (fastnn "
                        "has no run without an end)"));

  // Checkpoints to start from.
  const bool finetune = c.task_type() == "finetune";
  w.when("ckpt_file_name", !finetune || !c.checkpoint_path().empty(),
         "it names the file in model_dir that task_type finetune starts from",
         finetune ? " (checkpoint_path is set and wins)" : "; task_type is pretrain");
  w.when("model_dir", !finetune && !c.output_dir().empty(),
         "with task_type pretrain model_dir is only the run directory when output_dir is unset, and output_dir is set");
  for (const char* f : {"checkpoint_exclude_scopes", "ignore_missing_vars", "checkpoint_use_moving_averages"})
    w.when(f, start_checkpoint(c).empty(),
           "no checkpoint starts the run (set checkpoint_path, or task_type=finetune with model_dir)");

  // Loss scaling is for f16 compute only.
  const bool f16 = c.precision() == "fp16" || (c.precision() == "auto" && c.use_fp16());
  const std::string not_f16 = str("loss scaling is for fp16 compute, and precision is ", c.precision(),
                                  c.precision() == "auto" ? " with use_fp16 false" : "");
  w.when("loss_scale", !f16, not_f16);
  w.when("dynamic_loss_scale", !f16 && c.dynamic_loss_scale(), not_f16);
  w.when("loss_scale_window", !f16 || !c.dynamic_loss_scale(),
         f16 ? "dynamic_loss_scale is false (the scale is static)" : not_f16);
  w.when("use_fp16", c.precision() != "auto", "precision=", c.precision(), " chooses the compute dtype");

  // The classifier head's margin fields (trainer/head/margin.h: margin_spec). m1/m2/m3 or easy_margin
  // with a plain softmax are refused there; margin and scale have defaults, so they are only warned.
  const bool plain = c.loss_type() == "softmax" || c.loss_type() == "dist_softmax";
  const bool combined = c.has_margin1() || c.has_margin2() || c.has_margin3();
  w.when("margin", plain, "loss_type ", c.loss_type(), " has no margin (arcface, cosface and their dist_ forms read it)");
  w.when("margin", !plain && combined, "margin1/margin2/margin3 are given: the combined margin cos(m1*theta + m2) - m3 "
         "replaces it");
  w.when("scale", plain, "loss_type ", c.loss_type(), " uses the plain logits (the scale multiplies the cosine logits "
         "of arcface, cosface and their dist_ forms)");
  return w.out;
}

}  // namespace fastnn
