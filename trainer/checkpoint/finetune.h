// Fine-tuning: which checkpoint arrays initialise a model, by name.
//
// An array is loaded when the model expects its name, the name is under no excluded scope, and the
// shapes are equal. Otherwise it is skipped with a reason; the classifier of a checkpoint trained
// with a different num_classes is skipped by the shape rule without naming it. Scopes are plain
// prefixes of the name, as TF-slim's checkpoint_exclude_scopes ("logits" also excludes "logits_aux/w";
// write "logits/" to exclude only that scope).
//
// Expected names the checkpoint lacks are reported as missing (the model keeps their initial values).
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/named_array.h"

namespace fastnn::checkpoint {

struct SkippedArray {
  std::string name;
  std::string reason;  // "excluded by scope 'logits'", "shape [1001] in checkpoint, [10] in model", "not in model"
};

struct FinetuneSelection {
  std::vector<ArrayView> loaded;     // views into the checkpoint, in checkpoint order
  std::vector<SkippedArray> skipped;  // checkpoint arrays not loaded, in checkpoint order
  std::vector<std::string> missing;   // model names the selection does not provide, sorted

  // Multi-line report for the log: counts, then every skipped and missing name with its reason.
  std::string summary() const;
};

FinetuneSelection select_for_finetune(std::span<const ArrayView> checkpoint,
                                      const std::map<std::string, std::vector<int64_t>>& expected,
                                      std::span<const std::string> exclude_scopes = {});

}  // namespace fastnn::checkpoint
