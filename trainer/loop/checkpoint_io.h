// The training loop's side of checkpoints: graph variables and optimizer state <-> checkpoint arrays.
//
// Weights are every Graph::variables() tensor (parameters, then BN moving statistics) under its
// TF-slim name as F32 with its shape. restore_weights() requires every variable to be present with
// the same shape (FormatError naming the first one that is not); load_finetune() loads what
// select_for_finetune() accepts and logs the rest.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/named_array.h"
#include "trainer/graph/graph.h"

namespace fastnn::loop {

// Views into the graph's variables (valid while the graph lives and keeps its batch size).
std::vector<ckpt::ArrayView> weight_views(const graph::Graph& graph);
// Copies checkpoint arrays into the graph's variables by name: all of them (strict) or those present.
void restore_weights(graph::Graph& graph, std::span<const ckpt::ArrayView> arrays, const std::string& source);
// task_type=finetune: loads from `path` (a checkpoint prefix or file, or a directory's latest), skips
// arrays whose name or shape does not match (a different num_classes), logs the summary.
void load_finetune(graph::Graph& graph, const std::string& path);

}  // namespace fastnn::loop
