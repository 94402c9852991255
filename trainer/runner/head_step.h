// The CPU step runner's classifier head (trainer/head, docs/LARGE_SCALE.md): the loss after the
// graph's embedding output, and the head's weights in FastNN's update order.
//
//   HeadStep head(options, comm, optimizer_options);
//   graph.forward(images, true, step);
//   StepResult r = head.train(graph, labels, step);   // writes the graph's output gradient
//   graph.backward();
//
// Replicated head (softmax/arcface/cosface with an embedding): its weights are one more parameter of
// the model — param() joins the backbone's parameters, so the gradient average, weight decay, global
// norm and optimizer treat it like any other, and variables() adds "Head/weights" [classes, emb_dim] to
// checkpoints. Sharded head (dist_*): each rank's rows are never averaged; the runner calls
// add_weight_decay / norm_squared (summed over the ranks, so every rank clips by the same factor) /
// scale / step around its own stages, with the head's own optimizer over the same OptimizerOptions.
// PartialFC (sample_ratio < 1): only the sampled rows are decayed, clipped and updated, and only
// their optimizer slots move (a lazy update, as PLSC's); the other rows and slots keep their values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/checkpoint/row_shards.h"
#include "trainer/graph/graph.h"
#include "trainer/head/classifier_head.h"
#include "trainer/optim/optimizers.h"
#include "trainer/train_step.h"

namespace fastnn::runner {

// The head's weight matrix: its name in checkpoints and among the optimizer's parameters.
inline constexpr const char* kHeadWeights = "Head/weights";

// The loop's StepResult of a head's result (both runners' heads).
StepResult step_result(const head::HeadResult& h);

class HeadStep {
 public:
  HeadStep(const head::HeadOptions& options, Communicator* comm, const OptimizerOptions& optimizer);
  ~HeadStep();

  bool sharded() const { return sharded_; }
  // After graph.forward(training): the head's loss; writes dLoss/d(embedding) into the graph's output
  // gradient (and zeros into an auxiliary output's, which the head does not use).
  StepResult train(graph::Graph& graph, const Tensor& labels, uint64_t step);
  // After graph.forward(eval). Sharded heads evaluate a batch every rank holds (evaluate_shared).
  StepResult evaluate(graph::Graph& graph, const Tensor& labels);

  // Replicated head: the weights as a parameter of the model.
  ParamRef param();
  graph::NamedTensor variable();

  // Sharded head's update stages (the runner's update order calls them).
  void add_weight_decay(double weight_decay);
  double norm_squared();  // the gradient's, over every rank
  void scale(float factor);
  void step(float lr);

  // Sharded head's checkpoint arrays: this rank's rows of "Head/weights" and of each optimizer slot
  // ("Head/weights/<slot>"), global shape [classes, emb_dim] (row_shards.h); views valid until the
  // next step. The optimizer's scalars (beta powers) are replicated: "Head/<name>" in the chief's
  // optimizer file.
  std::vector<checkpoint::RowShardSlice> row_slices();
  std::vector<NamedArray> export_scalars() const;
  void import_scalars(const std::vector<NamedArray>& arrays);
  // This rank's rows from a checkpoint written at any number of ranks; slots too with `optimizer`.
  void load_rows(checkpoint::RowShardReader& reader, bool optimizer);

 private:
  head::ClassifierHead<float> head_;
  Communicator* comm_;
  bool sharded_;
  OptimizerOptions optimizer_options_;
  std::unique_ptr<Optimizer> optimizer_;  // sharded: over this rank's rows (the state PartialFC updates lazily)
  std::vector<int64_t> labels_;
};

}  // namespace fastnn::runner
