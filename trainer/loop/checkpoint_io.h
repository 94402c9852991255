// The training loop's side of checkpoints: model variables and optimizer state <-> checkpoint arrays.
//
// Weights are every Graph::variables() tensor (parameters, then BN moving statistics) under its
// TF-slim name as F32 with its shape. The step-runner forms work on f32 host values by name
// (StepRunner::host_variables / set_host_variables), so they serve every device:
//   variable_views        views of host values, shaped like the model's variables (for saving)
//   checkpoint_variables  every variable from the checkpoint, same shapes required (FormatError
//                         naming the first that is missing or differs): --resume, eval
//   finetune_variables    the start checkpoint (task_type=finetune, checkpoint_path): from fastnn's own,
//                         what select_for_finetune() accepts, the rest logged; from a TensorFlow
//                         checkpoint (core/tf_checkpoint/tf_checkpoint.h tells them apart by content),
//                         TF-slim's rule (checkpoint/tf_restore.h): every variable not excluded, the
//                         layouts converted, a missing or misshapen one an error
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/named_array.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/graph/graph.h"
#include "trainer/optim/optimizer.h"

namespace fastnn::runner {
class StepRunner;
}  // namespace fastnn::runner

namespace fastnn::loop {

std::vector<checkpoint::ArrayView> variable_views(const std::vector<graph::NamedTensor>& variables,
                                            const std::vector<NamedArray>& values);
std::vector<NamedArray> checkpoint_variables(const std::vector<graph::NamedTensor>& variables,
                                             std::span<const checkpoint::ArrayView> arrays, const std::string& source);
struct StartOptions {
  std::vector<std::string> exclude_scopes;  // TF-slim's checkpoint_exclude_scopes; one matching no variable: ConfigError
  bool ignore_missing_vars = false;         // TensorFlow checkpoints (tf_restore.h)
  bool use_moving_averages = false;         // TensorFlow checkpoints (tf_restore.h)
};
// Loads `path` (fastnn's: a checkpoint prefix or file, or a directory's latest; TensorFlow's: a prefix,
// a V1 file, a folder with its `checkpoint` file) into the variables of `net`, except the arrays under
// the exclude scopes.
std::vector<NamedArray> finetune_variables(const std::vector<graph::NamedTensor>& variables, const NetDef& net,
                                           const std::string& path, const StartOptions& options = {});

// A sharded head's rows of this rank, from a checkpoint written at any number of ranks (--resume with
// the optimizer's slots, eval without); nothing for a runner without sharded rows.
void load_head_rows(runner::StepRunner& runner, const checkpoint::LoadedCheckpoint& l, bool optimizer);

// Fine-tuning a run with a sharded head (task_type=finetune, checkpoint_path): its rows come from the
// start checkpoint's row shards, written at any number of ranks, when the checkpoint has them at the
// same global shape and no exclude scope covers them; otherwise they keep their initial values and the
// log says why — TF-slim's rule for every other variable (equal shapes load, the rest is skipped with
// the reason). Returns the exclude scopes that name no row array, for finetune_variables (which refuses
// a scope matching none of the model's variables, and the rows are not among those).
std::vector<std::string> finetune_head_rows(runner::StepRunner& runner, const std::string& path,
                                            const std::vector<std::string>& exclude);

}  // namespace fastnn::loop
