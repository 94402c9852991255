// Starting a model from a TensorFlow checkpoint the way TF-slim's train_image_classifier.py does
// (_get_init_fn, slim.assign_from_checkpoint_fn):
//   - every model variable under none of `exclude_scopes` (plain name prefixes, as fastnn's own
//     fine-tuning) is restored from the checkpoint tensor of its name, with use_moving_averages from
//     "<name>/ExponentialMovingAverage" where the checkpoint has one (TF-slim's evaluation with
//     moving_average_decay), its layout converted (tf_layout.h);
//   - a variable the checkpoint lacks is an error unless ignore_missing_vars (TF-slim's flag: it keeps
//     its initial value and is listed); a shape that is not the variable's in TF-slim's layout, or a
//     dtype that is not floating point, is always an error. All such variables are named in one
//     ConfigError, each with the checkpoint's shape and the model's (in both layouts);
//   - checkpoint tensors that are no model variable are ignored and counted by kind in the summary:
//     global_step, optimizer slots (Momentum, RMSProp, Adam, ...), moving averages, anything else.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/tf_checkpoint/tf_checkpoint.h"
#include "trainer/checkpoint/tf_layout.h"
#include "trainer/params.h"

namespace fastnn::checkpoint {

struct TfRestoreOptions {
  std::vector<std::string> exclude_scopes;
  bool use_moving_averages = false;
  bool ignore_missing_vars = false;
};

struct TfRestore {
  std::vector<NamedArray> values;  // fastnn's layout, float32, in the order of `variables`
  std::string summary;             // what was restored, kept and ignored, for the log
};

TfRestore restore_from_tf(const tf_checkpoint::TfCheckpoint& checkpoint, std::span<const TfVariable> variables,
                          const TfRestoreOptions& options = {});

}  // namespace fastnn::checkpoint
