// Sanity checks learned the hard way, kept apart from the loop so they can be tested alone.
//
//   first_loss_warning   a fresh classifier should start near ln(num_classes) (uniform predictions);
//                        far from it means a bad initialisation, wrong labels or wrong num_classes.
//                        "Far": outside [0.5 x ln(C) - 0.1, 2 x ln(C) + 1].
//   check_loss_finite    throws fastnn::Error naming the step and learning rate on NaN or Inf
//                        (the CPU backend trains in f32 only; fp16 loss-scale back-off is the CUDA
//                        backend's business).
//   accuracy_gap_report  the train-batch vs held-out accuracy line printed at each evaluation; a
//                        held-out accuracy far below training (> 0.2) gets a warning naming the
//                        usual cause (batch-norm moving statistics not matching the batch ones).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fastnn::loop {

std::optional<std::string> first_loss_warning(double loss, int64_t num_classes);
void check_loss_finite(double loss, int64_t step, double lr);
struct GapReport {
  std::string line;
  bool suspicious = false;
};
GapReport accuracy_gap_report(double train_accuracy, double eval_accuracy);

}  // namespace fastnn::loop
