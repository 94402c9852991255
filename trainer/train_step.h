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
//
// Device graphs (Device::kCuda): kernels come from the graph's registry for that device; the losses and
// top-1/top-5 counts are written into one small device block and read back with a single
// device->host copy per call (TrainStepOptions::download), not per layer or per head. Loss scaling:
// train() seeds the backward with dLoss = loss_scale (x aux weight), so every gradient it leaves in
// the graph is loss_scale times the true one; the reported losses are unscaled.
// Not thread-safe; one TrainStep per graph.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "trainer/graph/graph.h"

namespace fastnn {

struct TrainStepOptions {
  double label_smoothing = 0;
  std::vector<double> class_weights;  // one per class, > 0 (ops/softmax_xent.h); empty: unweighted
  double loss_scale = 1;  // > 0; see set_loss_scale
  // Non-CPU graphs: host->device and device->host copies of equal-size tensors (the backend provides
  // them; they may wait for the device). Without them a device graph's step throws Error.
  void (*upload)(const Tensor& host, Tensor& device) = nullptr;
  void (*download)(const Tensor& device, Tensor& host) = nullptr;
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

  // micro_batch: Graph::forward's (gradient accumulation draws other masks for each part of a step).
  StepResult train(const Tensor& images, const Tensor& labels, uint64_t step, uint64_t micro_batch = 0);
  // train() without its read-back, for a device runner that reads each step's results one step late:
  // queues forward, losses, backward and the counts into results_block(); results_from() decodes a host
  // copy of that block (made once the step's work is done) into train()'s StepResult.
  void queue_train(const Tensor& images, const Tensor& labels, uint64_t step, uint64_t micro_batch = 0);
  const Tensor& results_block() const;
  StepResult results_from(const Tensor& host_block) const;
  // The training-mode loss (batch statistics, the step's dropout masks) without backward: what
  // train() differentiates (gradient checks, loss probes).
  StepResult loss(const Tensor& images, const Tensor& labels, uint64_t step);
  StepResult evaluate(const Tensor& images, const Tensor& labels);

  // Mixup / CutMix (pipeline/mixup.h): the loss of the following train() / queue_train() steps is the
  // mean over samples i of N of w_i * CE(y_i) + (1 - w_i) * CE(y_{N-1-i}) (timm's mixup_target, label
  // smoothing applied to both; with class weights each of the two sums is normalised as the plain loss
  // is), and its gradient that combination's. One weight for every sample (timm's batch mode) or N of
  // them (pair and elem modes); 1 / none: the plain loss. CPU graphs only (Error at the step on a device
  // graph). Top-1 / top-5 still count each sample's own label; loss() and evaluate() never mix.
  void set_label_mix(double own_weight);
  void set_label_mix(std::span<const double> own_weights);

  // The factor train() seeds the backward with (dynamic loss scaling changes it between steps).
  void set_loss_scale(double scale);
  // The one-element loss gradients train() starts the backward from, each with its weight (1 for the
  // logits, the aux weight for aux logits), for these labels' batch: a device runner writes its own
  // scale times the weight into them before train() (the CUDA runner's device-side loss scale).
  std::vector<std::pair<Tensor, double>> loss_gradient_seeds(const Tensor& labels);
  double loss_scale() const { return options_.loss_scale; }

 private:
  struct Heads;
  Heads& heads(const Tensor& labels);
  void loss_forward(size_t output, const Tensor& labels);
  // dLoss/dLogits of output `output` for these labels, seeded by `dloss` (one element), into `d_logits`.
  void loss_backward(size_t output, const Tensor& labels, const Tensor& dloss, const Tensor& d_logits);
  // queue_train()'s loss and gradient of one output under set_label_mix (the plain loss already forward).
  void mixed_loss(size_t output, const Tensor& labels);
  void per_sample_mixed_loss(size_t output, const Tensor& labels, double seed);
  void counts(const Tensor& labels);
  void fill_dloss(Heads& h);
  // One copy of the results block to the host; fills the losses and counts.
  StepResult read_results(bool aux);
  StepResult decode(const Tensor& host_block, bool aux) const;

  graph::Graph& graph_;
  TrainStepOptions options_;
  std::unique_ptr<Heads> heads_;
  double mix_ = 1;  // set_label_mix: one weight for every sample
  std::vector<double> sample_mix_;  // set_label_mix: one per sample where they differ (then mix_ is unused)
};

}  // namespace fastnn
