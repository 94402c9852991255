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
//   eval_collapse_report an evaluation that predicts one class for nearly everything (>= 90% of the
//                        examples, where no class is that common) or whose loss exploded (> 20 x
//                        ln(C) + 10), while training fits: the warning names the likely cause with
//                        numbers. With batch norm: how many updates the moving averages have had at
//                        the net's decay and how much of their starting value they still hold
//                        (decay^steps), the steps they need (3 / (1 - decay): 95% settled) and the
//                        flag (batch_norm_decay, bn_momentum) with the largest of 0.999, 0.99, 0.9
//                        that settles within the steps trained so far. Without: over-fitting, or evaluation
//                        data unlike the training data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

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

struct EvalShape {
  double train_accuracy = 0, eval_accuracy = 0, eval_loss = 0;
  int64_t num_classes = 0;
  std::vector<int64_t> confusion;  // [true][predicted], num_classes^2; empty when not counted
  int64_t steps = 0;               // training steps so far (the moving averages' updates)
  double batch_norm_decay = -1;    // the largest decay of the net's batch norms; < 0: none
};
// Empty when the evaluation looks sane.
std::string eval_collapse_report(const EvalShape& e);

}  // namespace fastnn::loop
