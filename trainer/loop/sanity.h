// Sanity checks learned the hard way, kept apart from the loop so they can be tested alone.
//
//   first_loss_warning   a fresh classifier should start near ln(num_classes) (uniform predictions);
//                        far from it means a bad initialisation, wrong labels or wrong num_classes.
//                        "Far": outside [0.5 x ln(C) - 0.1, 2 x ln(C) + 1].
//   first_loss_check     the same, told the label-agnostic loss of the step's logits (the loss
//                        averaged over every possible label: what these logits score knowing nothing
//                        about the labels). A first loss far from ln(C) but consistent with it
//                        (within [0.5 x L0 - 0.1, 2 x L0 + 1]) means the initialisation produces large
//                        logits while the labels look fine: a note, not a warning. TF-slim's LeNet
//                        (truncated_normal(0.1) weights, the published init) starts like this, with
//                        a first loss of 10-20 on 10 classes. Anything else stays a warning.
//   check_loss_finite    throws fastnn::Error naming the step and learning rate on NaN or Inf
//                        (the CPU backend trains in f32 only; fp16 loss-scale back-off is the CUDA
//                        backend's business).
//   accuracy_gap_report  the train-batch vs held-out accuracy line printed at each evaluation; a
//                        held-out accuracy far below training (> 0.2) gets a warning naming the
//                        usual cause (batch-norm moving statistics not matching the batch ones).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "trainer/tensor.h"

namespace fastnn::loop {

std::optional<std::string> first_loss_warning(double loss, int64_t num_classes);
// mean over rows of logsumexp(row) - mean(row); logits row-major [n, classes], n >= 1.
double label_agnostic_loss(std::span<const double> logits, int64_t classes);
struct FirstLossCheck {
  std::string line;  // empty: nothing to report
  bool warning = false;
};
FirstLossCheck first_loss_check(double loss, int64_t num_classes, std::optional<double> label_agnostic);
// The loop's call: first_loss_check with the label-agnostic loss of `logits` ([N, C] on the CPU; on
// another device the plain ln(C) check), logged as a warning or an info line.
void report_first_loss(double loss, const Tensor& logits);
void check_loss_finite(double loss, int64_t step, double lr);
struct GapReport {
  std::string line;
  bool suspicious = false;
};
GapReport accuracy_gap_report(double train_accuracy, double eval_accuracy);

}  // namespace fastnn::loop
