// The training loop's side of checkpoints: model variables and optimizer state <-> checkpoint arrays.
//
// Weights are every Graph::variables() tensor (parameters, then BN moving statistics) under its
// TF-slim name as F32 with its shape. The step-runner forms work on f32 host values by name
// (StepRunner::host_variables / set_host_variables), so they serve every device:
//   variable_views        views of host values, shaped like the model's variables (for saving)
//   checkpoint_variables  every variable from the checkpoint, same shapes required (FormatError
//                         naming the first that is missing or differs): --resume, eval
//   finetune_variables    what select_for_finetune() accepts (task_type=finetune), the rest logged
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/named_array.h"
#include "trainer/graph/graph.h"
#include "trainer/optim/optimizer.h"

namespace fastnn::loop {

std::vector<ckpt::ArrayView> variable_views(const std::vector<graph::NamedTensor>& variables,
                                            const std::vector<NamedArray>& values);
std::vector<NamedArray> checkpoint_variables(const std::vector<graph::NamedTensor>& variables,
                                             std::span<const ckpt::ArrayView> arrays, const std::string& source);
// Loads `path` (a checkpoint prefix or file, or a directory's latest), except the arrays under
// `exclude_scopes` (TF-slim's checkpoint_exclude_scopes; a scope matching no variable: ConfigError).
std::vector<NamedArray> finetune_variables(const std::vector<graph::NamedTensor>& variables, const std::string& path,
                                           std::span<const std::string> exclude_scopes = {});

}  // namespace fastnn::loop
