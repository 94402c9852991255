// One training step on a batch, FastNN's loss: sparse softmax cross-entropy of the logits (with
// optional label smoothing) plus aux_loss_weight (0.4) x the same loss of the auxiliary logits when
// the net has them.
//
//   TrainStep ts(graph, {.label_smoothing = cfg.label_smoothing()});
//   StepResult r = ts.train(images, labels, step);   // forward, loss, backward: gradients in graph
//   add_weight_decay(refs, wd); clip_by_global_norm(refs, max_norm); optimizer.step(lr);  // the caller
//
// train(): graph forward in training mode, loss forward, loss backward with dLoss = 1 (aux: the aux
// weight) written straight into the graph's output gradients, graph backward. evaluate(): forward in
// eval mode (moving BN statistics, no dropout), main-head loss, top-1 and top-5 counts; no backward.
// loss(): train() without the backward.
// Both read labels [N] (i32 or i64, each in [0, classes): else Error) on the graph's device, and follow
// the graph's batch size (kernels are re-made when Graph::set_batch_size changed it).
// Not thread-safe; one TrainStep per graph.
#pragma once

#include <cstdint>
#include <memory>

#include "trainer/graph/graph.h"

namespace fastnn {

struct TrainStepOptions {
  double label_smoothing = 0;
};

struct StepResult {
  double loss = 0;       // main + aux_weight * aux (train); main (evaluate)
  double main_loss = 0;  // cross-entropy of the logits
  double aux_loss = 0;   // cross-entropy of the aux logits (0 without an aux head)
  int64_t correct = 0;       // top-1 hits of the logits
  int64_t correct_top5 = 0;  // top-5 hits (top-k with k = min(5, classes))
  int64_t examples = 0;

  double accuracy() const { return examples ? static_cast<double>(correct) / static_cast<double>(examples) : 0.0; }
};

class TrainStep {
 public:
  explicit TrainStep(graph::Graph& graph, const TrainStepOptions& options = {});
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  StepResult train(const Tensor& images, const Tensor& labels, uint64_t step);
  // The training-mode loss (batch statistics, the step's dropout masks) without backward: what
  // train() differentiates (gradient checks, loss probes).
  StepResult loss(const Tensor& images, const Tensor& labels, uint64_t step);
  StepResult evaluate(const Tensor& images, const Tensor& labels);

 private:
  struct Heads;
  Heads& heads(const Tensor& labels);
  double loss_forward(size_t output, const Tensor& labels);
  void counts(const Tensor& labels, StepResult& r);

  graph::Graph& graph_;
  TrainStepOptions options_;
  std::unique_ptr<Heads> heads_;
};

}  // namespace fastnn
