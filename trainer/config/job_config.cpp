#include "trainer/config/job_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "core/check.h"
#include "core/comma_list.h"
#include "core/input_file.h"
#include "core/logging.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/field_effects.h"
#include "trainer/config/config_file.h"
#include "trainer/config/overrides.h"
#include "trainer/head/margin.h"

namespace fastnn {

namespace {

// Collects TextFormat errors as "source:line:col: message", adding field-name suggestions.
class Collector : public google::protobuf::io::ErrorCollector {
 public:
  explicit Collector(std::string source) : source_(std::move(source)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!first_.empty()) return;  // the first error is the one to fix; the rest often follow from it
    const std::string hint = suggestion(message);
    const bool drop_period = !hint.empty() && !message.empty() && message.back() == '.';
    first_ = str(source_, ":", line + 1, ":", column + 1, ": ",
                 drop_period ? message.substr(0, message.size() - 1) : message, hint);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  // For 'Message type "fastnn.JobConfig" has no field named "batchsize".' suggest the closest names.
  static std::string suggestion(const std::string& message) {
    const std::string marker = "has no field named \"";
    const size_t at = message.find(marker);
    const size_t t0 = message.find('"');
    if (at == std::string::npos || t0 == std::string::npos) return "";
    const size_t t1 = message.find('"', t0 + 1);
    const size_t n0 = at + marker.size();
    const size_t n1 = message.find('"', n0);
    if (t1 == std::string::npos || n1 == std::string::npos) return "";
    const Descriptor* type = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
        message.substr(t0 + 1, t1 - t0 - 1));
    if (type == nullptr) return "";
    const std::vector<std::string> near = closest_field_names(*type, message.substr(n0, n1 - n0));
    std::string s = near.empty() ? "" : "; did you mean ";
    for (size_t i = 0; i < near.size(); ++i) s += (i ? (i + 1 == near.size() ? " or " : ", ") : "") + near[i];
    return s + (near.empty() ? "" : "?") + " (`fastnn train --help` lists every field)";
  }

  std::string source_;
  std::string first_;
};

}  // namespace

JobConfig parse_job_config_text(std::string_view text, const std::string& source) {
  JobConfig config;
  Collector errors(source);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &config)) {
    throw ConfigError(errors.first().empty() ? str(source, ": not a valid job config") : errors.first());
  }
  return config;
}

JobConfig read_job_config_file(const std::string& path) {
  // A regular file only (a FIFO is refused at once, not waited on), size-checked before reading.
  return parse_job_config_text(read_regular_file(path, kMaxJobConfigBytes), path);
}

namespace {

// Collects range problems; `!(ok)` so that NaN always fails.
struct Problems {
  std::vector<std::string> list;
  template <typename... Args>
  void check(bool ok, Args&&... args) {
    if (!ok) list.push_back(str(std::forward<Args>(args)...));
  }
};

}  // namespace

void validate_job_config(const JobConfig& c) {
  Problems p;
  // Enumerated strings, generically from the schema.
  const Descriptor& type = *JobConfig::descriptor();
  const auto* r = c.GetReflection();
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& f = *type.field(i);
    const std::vector<std::string> valid = field_choices(f);
    if (valid.empty() || f.cpp_type() != FieldDescriptor::CPPTYPE_STRING) continue;
    std::vector<std::string> values;
    if (f.is_repeated()) {
      for (int k = 0; k < r->FieldSize(c, &f); ++k) values.push_back(r->GetRepeatedString(c, &f, k));
    } else {
      values.push_back(r->GetString(c, &f));
    }
    for (const std::string& v : values) {
      p.check(std::find(valid.begin(), valid.end(), v) != valid.end(), f.name(), " \"", v,
              "\" is not one of: ", format_choices(valid));
    }
  }

  p.check(c.num_sample_per_epoch() >= 1, "num_sample_per_epoch must be >= 1, got ", c.num_sample_per_epoch());
  p.check(c.num_classes() >= 1, "num_classes must be >= 1, got ", c.num_classes());
  // A replicated classifier's logits are one layer of int-sized units; only the model-parallel head
  // (its rows split over the ranks, int64 throughout) goes beyond. 2^62 keeps rows x emb_dim in range.
  p.check(c.num_classes() <= std::numeric_limits<int32_t>::max() || head::is_model_parallel_loss(c.loss_type()),
          "num_classes ", c.num_classes(), " is above 2147483647: only a dist_ loss_type (the model-parallel head, "
          "docs/LARGE_SCALE.md) holds that many classes");
  p.check(c.num_classes() <= (int64_t{1} << 62), "num_classes must be <= 2^62, got ", c.num_classes());
  p.check(c.labels_offset() >= 0, "labels_offset must be >= 0, got ", c.labels_offset());
  p.check(c.shuffle_buffer_size() >= 0, "shuffle_buffer_size must be >= 0, got ", c.shuffle_buffer_size());
  p.check(c.num_parallel_batches() >= 1, "num_parallel_batches must be >= 1, got ", c.num_parallel_batches());
  p.check(c.prefetch_buffer_size() >= 0, "prefetch_buffer_size must be >= 0, got ", c.prefetch_buffer_size());
  p.check(c.num_preprocessing_threads() >= 1, "num_preprocessing_threads must be >= 1, got ",
          c.num_preprocessing_threads());

  p.check(c.task_type() != "finetune" || !c.model_dir().empty() || !c.checkpoint_path().empty(),
          "task_type finetune needs model_dir (or TF-slim's checkpoint_path)");
  p.check(c.task_type() != "finetune" || c.model_dir().empty() || c.checkpoint_path().empty(),
          "checkpoint_path and task_type finetune with model_dir both name a start checkpoint; set one");
  p.check(c.memory_limit_mb() >= 0 && std::isfinite(c.memory_limit_mb()), "memory_limit_mb must be >= 0, got ",
          c.memory_limit_mb());
  p.check(c.num_epochs() >= 1, "num_epochs must be >= 1, got ", c.num_epochs());
  p.check(c.weight_decay() >= 0, "weight_decay must be >= 0, got ", c.weight_decay());
  p.check(!c.has_max_gradient_norm() || c.max_gradient_norm() > 0,
          "max_gradient_norm must be > 0 when set, got ", c.max_gradient_norm());
  p.check(c.batch_size() >= 1, "batch_size must be >= 1, got ", c.batch_size());
  p.check(c.gradient_accumulation_steps() >= 1 && c.gradient_accumulation_steps() <= 1024,
          "gradient_accumulation_steps must be in [1, 1024], got ", c.gradient_accumulation_steps());
  p.check(int64_t{c.batch_size()} * c.gradient_accumulation_steps() <= std::numeric_limits<int32_t>::max(),
          "batch_size x gradient_accumulation_steps must fit in 32 bits, got ", c.batch_size(), " x ",
          c.gradient_accumulation_steps());
  p.check(c.label_smoothing() >= 0 && c.label_smoothing() < 1, "label_smoothing must be in [0, 1), got ",
          c.label_smoothing());
  if (c.has_drop_path_keep_prob())
    p.check(c.drop_path_keep_prob() > 0 && c.drop_path_keep_prob() <= 1, "drop_path_keep_prob must be in (0, 1], got ",
            c.drop_path_keep_prob());
  if (c.has_total_training_steps())
    p.check(c.total_training_steps() >= 0, "total_training_steps must be >= 0, got ", c.total_training_steps());
  p.check(!c.has_train_image_size() || (c.train_image_size() >= 1 && c.train_image_size() <= 4096),
          "train_image_size must be in [1, 4096], got ", c.train_image_size());
  p.check(!c.has_train_image_size() || !c.has_net(),
          "train_image_size sets a zoo model's input; with net, set net { input { height width } }");

  p.check(c.learning_rate() >= 0 && std::isfinite(c.learning_rate()), "learning_rate must be >= 0, got ",
          c.learning_rate());
  p.check(c.learning_rate_decay_factor() > 0, "learning_rate_decay_factor must be > 0, got ",
          c.learning_rate_decay_factor());
  p.check(c.num_epochs_per_decay() > 0, "num_epochs_per_decay must be > 0, got ", c.num_epochs_per_decay());
  p.check(c.end_learning_rate() >= 0, "end_learning_rate must be >= 0, got ", c.end_learning_rate());
  p.check(c.polynomial_decay_power() > 0, "polynomial_decay_power must be > 0, got ", c.polynomial_decay_power());
  p.check(c.warmup_steps() >= 0, "warmup_steps must be >= 0, got ", c.warmup_steps());
  p.check(c.min_lr_ratio() >= 0 && c.min_lr_ratio() <= 1, "min_lr_ratio must be in [0, 1], got ", c.min_lr_ratio());
  if (c.learning_rate_decay_type() == "cosine") {
    p.check(c.decay_scheme().empty(), "decay_scheme \"", c.decay_scheme(),
            "\" has no effect with learning_rate_decay_type cosine (it decays from warmup_steps to stop_at_step); "
            "leave decay_scheme empty");
    p.check(c.stop_at_step() > c.warmup_steps(), "cosine decay needs stop_at_step (", c.stop_at_step(),
            ") > warmup_steps (", c.warmup_steps(), ")");
  }
  if (c.learning_rate_decay_type() == "piecewise") {
    p.check(c.lr_values_size() == c.lr_boundaries_size() + 1, "piecewise needs one more lr_values (",
            c.lr_values_size(), ") than lr_boundaries (", c.lr_boundaries_size(), ")");
    for (int i = 1; i < c.lr_boundaries_size(); ++i) {
      p.check(c.lr_boundaries(i) > c.lr_boundaries(i - 1), "lr_boundaries must increase: ",
              c.lr_boundaries(i - 1), " then ", c.lr_boundaries(i));
    }
    for (double v : c.lr_values()) p.check(v >= 0, "lr_values must be >= 0, got ", v);
  }

  p.check(c.adadelta_rho() >= 0 && c.adadelta_rho() <= 1, "adadelta_rho must be in [0, 1], got ", c.adadelta_rho());
  p.check(c.adagrad_initial_accumulator_value() > 0, "adagrad_initial_accumulator_value must be > 0, got ",
          c.adagrad_initial_accumulator_value());
  p.check(c.adam_beta1() >= 0 && c.adam_beta1() < 1, "adam_beta1 must be in [0, 1), got ", c.adam_beta1());
  p.check(c.adam_beta2() >= 0 && c.adam_beta2() < 1, "adam_beta2 must be in [0, 1), got ", c.adam_beta2());
  p.check(c.opt_epsilon() >= 0, "opt_epsilon must be >= 0, got ", c.opt_epsilon());
  p.check(c.ftrl_learning_rate_power() <= 0, "ftrl_learning_rate_power must be <= 0, got ",
          c.ftrl_learning_rate_power());
  p.check(c.ftrl_initial_accumulator_value() >= 0, "ftrl_initial_accumulator_value must be >= 0, got ",
          c.ftrl_initial_accumulator_value());
  p.check(c.ftrl_l1() >= 0, "ftrl_l1 must be >= 0, got ", c.ftrl_l1());
  p.check(c.ftrl_l2() >= 0, "ftrl_l2 must be >= 0, got ", c.ftrl_l2());
  p.check(c.momentum() >= 0, "momentum must be >= 0, got ", c.momentum());
  p.check(c.rmsprop_momentum() >= 0, "rmsprop_momentum must be >= 0, got ", c.rmsprop_momentum());
  p.check(c.rmsprop_decay() >= 0 && c.rmsprop_decay() <= 1, "rmsprop_decay must be in [0, 1], got ",
          c.rmsprop_decay());
  p.check(c.adam_weight_decay_rate() >= 0, "adam_weight_decay_rate must be >= 0, got ", c.adam_weight_decay_rate());

  p.check(c.stop_at_step() >= 1, "stop_at_step must be >= 1, got ", c.stop_at_step());
  p.check(c.log_loss_every_n_iters() >= 0, "log_loss_every_n_iters must be >= 0, got ", c.log_loss_every_n_iters());
  p.check(c.profile_every_n_iters() >= 0, "profile_every_n_iters must be >= 0, got ", c.profile_every_n_iters());
  p.check(c.profile_at_task() >= 0, "profile_at_task must be >= 0, got ", c.profile_at_task());
  p.check(c.save_checkpoints_steps() >= 0, "save_checkpoints_steps must be >= 0, got ", c.save_checkpoints_steps());
  p.check(c.keep_checkpoint_max() >= 0, "keep_checkpoint_max must be >= 0, got ", c.keep_checkpoint_max());
  p.check(c.eval_every_n_steps() >= 0, "eval_every_n_steps must be >= 0, got ", c.eval_every_n_steps());
  p.check(c.save_checkpoints_secs() >= 0 && std::isfinite(c.save_checkpoints_secs()),
          "save_checkpoints_secs must be >= 0, got ", c.save_checkpoints_secs());
  p.check(c.save_summaries_secs() >= 0 && std::isfinite(c.save_summaries_secs()),
          "save_summaries_secs must be >= 0, got ", c.save_summaries_secs());
  if (c.has_batch_norm_decay())
    p.check(c.batch_norm_decay() >= 0 && c.batch_norm_decay() < 1, "batch_norm_decay must be in [0, 1), got ",
            c.batch_norm_decay());
  if (c.has_batch_norm_epsilon())
    p.check(c.batch_norm_epsilon() > 0 && c.batch_norm_epsilon() < 1, "batch_norm_epsilon must be in (0, 1), got ",
            c.batch_norm_epsilon());
  p.check(c.loss_scale() > 0 && std::isfinite(c.loss_scale()), "loss_scale must be > 0, got ", c.loss_scale());
  p.check(c.collective_timeout_seconds() >= 0, "collective_timeout_seconds must be >= 0, got ",
          c.collective_timeout_seconds());
  p.check(c.allreduce_bucket_mb() > 0 && std::isfinite(c.allreduce_bucket_mb()), "allreduce_bucket_mb must be > 0, got ",
          c.allreduce_bucket_mb());

  try {
    validate_hooks(c);
  } catch (const ConfigError& e) {
    p.list.push_back(e.what());
  }

  if (!p.list.empty()) {
    std::string msg = "invalid job config:";
    for (const std::string& s : p.list) msg += "\n  " + s;
    throw ConfigError(msg);
  }
}

std::vector<std::string> ignored_field_notices(const JobConfig& c) {
  std::vector<std::string> out;
  if (c.has_enable_paisoar()) {
    out.push_back(str("enable_paisoar=", c.enable_paisoar() ? "true" : "false",
                      " is PAI-specific; fastnn accepts and ignores it"));
  }
  if (c.has_protocol()) {
    out.push_back(str("protocol=", c.protocol(),
                      " is PAI-specific; fastnn ignores it (processes talk over MPI/NCCL)"));
  }
  return out;
}

JobConfig load_job_config(const std::string& path, std::span<const std::string> overrides) {
  JobConfig config = path.empty() ? JobConfig() : read_config_file(path);  // text format, YAML or JSON
  apply_overrides(config, overrides);
  validate_job_config(config);
  for (const std::string& notice : ignored_field_notices(config)) log_warn(notice);
  for (const std::string& warning : inert_field_warnings(config)) log_warn(warning);
  return config;
}

std::string job_config_to_text(const JobConfig& config) {
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(config, &out);
  return out;
}

int64_t step_batch_size(const JobConfig& c) {
  return int64_t{c.batch_size()} * std::max(1, c.gradient_accumulation_steps());
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  for (std::string_view item : split_commas(s))
    if (!trim_blanks(item).empty()) out.emplace_back(trim_blanks(item));
  return out;
}

}  // namespace fastnn
