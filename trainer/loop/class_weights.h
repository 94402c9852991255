// class_weights (docs/TRAINING.md, "Loss"): the config field resolved into one weight per class of the
// model, for the training loss (PyTorch's CrossEntropyLoss(weight=...), ops/softmax_xent.h).
//
//   ""          no weights (an empty vector)
//   balanced    scikit-learn's compute_class_weight("balanced"): n / (K x count_c), counted in the
//               manifest's train split (label_histogram; class c of the model is the data's c +
//               labels_offset); refused when the train records do not come from the manifest's train
//               split, or when a class has no train record (its weight would be infinite)
//   "w0,w1,..." K numbers > 0, in class order
//
// Errors: ConfigError naming the field, what was given and why.
#pragma once

#include <vector>

#include "schemas/job_config.pb.h"
#include "trainer/loop/run_setup.h"

namespace fastnn::loop {

std::vector<double> resolve_class_weights(const JobConfig& c, const RunSetup& s);

// "class weights 0.5, 2, ...": the first few weights for the log (all when there are at most 12).
std::string class_weights_text(const std::vector<double>& w);
// class_balanced_sampling's start line from rank 0's stored records per class (Dataset::
// balanced_class_counts) in a world of `world` ranks: what each class sends per epoch, against what it holds.
std::string class_balance_text(const std::vector<uint64_t>& stored, int world);

}  // namespace fastnn::loop
