// The CUDA step runner's classifier head (trainer/head/classifier_head_cuda.h, docs/LARGE_SCALE.md): what
// head_step.h is to the CPU runner, wired into step_runner_cuda.cpp the same way. CUDA builds only.
//
//   HeadStepCuda head(options, collectives, optimizer_options);
//   graph.forward(images, true, step);
//   head.queue_train(graph, labels, step, loss_scale);   // writes the graph's output gradient
//   graph.backward();
//   StepResult r = head.read_results();                   // one wait; Error for a bad label
//
// The head computes in f32 whatever the graph's dtype: the embedding is converted on entry and its
// gradient rounded back into the graph's output gradient, times *loss_scale (the device loss scaler's
// scale), as the loss seed of a plain f16 step would be.
//
// Replicated head (arcface, cosface, softmax with emb_dim): its weights are one more parameter of the
// device optimizer (param(): "Head/weights", f32 master = the head's weights, f32 gradient, decayed),
// averaged over the ranks with the backbone's gradients (gradient_buffer()) and saved as a variable
// (variable()). Sharded head (dist_*): its rows and their optimizer slots stay on this rank
// (DeviceRowOptimizer); the runner calls prepare() before the backbone's decision — weight decay,
// unscaling, and the rows' gradient statistics summed over the ranks into statistics(), which the
// backbone's decision adds (DeviceOptimizer::set_extra_statistics), so every rank clips and skips alike —
// and apply() after it. PartialFC: only the sampled rows and their slots move (the lazy update).
//
// Checkpoints (sharded): row_slices() copies this rank's rows of "Head/weights" and of its slots
// ("Head/weights/<slot>") to the host — the arrays the CPU runner writes, so a run moves between
// devices and world sizes (row_layout(): their names and ranges only, nothing copied); load_rows()
// reads them back from a checkpoint of any world size and drops row_slices()' host copies. The
// optimizer's scalars (adam's beta powers) are the backbone's, since the rows step with the backbone's
// decision: export_scalars() writes them under the CPU head's "Head/" names; import ignores those.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/checkpoint/row_shards.h"
#include "trainer/graph/graph.h"
#include "trainer/head/classifier_head_cuda.h"
#include "trainer/optim/device_optimizer.h"
#include "trainer/optim/device_row_optimizer.h"
#include "trainer/train_step.h"

namespace fastnn::runner {

class HeadStepCuda {
 public:
  // comm: the world's head collectives (null: one process); must outlive this.
  HeadStepCuda(const head::HeadOptions& options, head::HeadCollectives* comm, const OptimizerOptions& optimizer);

  bool sharded() const { return sharded_; }

  // After graph.forward(training) on the current stream; labels [N] i32/i64 on the device.
  void queue_train(graph::Graph& graph, const Tensor& labels, uint64_t step, const double* loss_scale);
  StepResult read_results();
  // After graph.forward(eval). Sharded heads evaluate a batch every rank holds (evaluate_shared).
  StepResult evaluate(graph::Graph& graph, const Tensor& labels);

  // Replicated head.
  DeviceParam param(float weight_decay);
  graph::NamedTensor variable();
  Tensor gradient();  // f32 [rows * emb_dim] on the device (at least one element), in place

  // Sharded head's update, around the backbone's (control: its DeviceOptimizer::control()).
  void prepare(float weight_decay, bool stats, const void* control, cudaStream_t s);
  const double* statistics() { return rows_->totals(); }
  void apply(const void* control, cudaStream_t s);

  // Sharded head's checkpoint arrays: host copies of every row and slot (a device-to-host copy of the
  // whole shard each call), valid until the next call, training step or load_rows().
  std::vector<checkpoint::RowShardSlice> row_slices();
  // The same slices without data (null): names, shapes, this rank's range; nothing copied.
  std::vector<checkpoint::RowShardSlice> row_layout() const;
  std::vector<NamedArray> export_scalars(const std::vector<NamedArray>& backbone_state) const;
  void load_rows(checkpoint::RowShardReader& reader, bool optimizer);

 private:
  const int64_t* selected() const;
  int64_t selected_count() const;

  head::CudaClassifierHead head_;
  head::HeadCollectives* comm_;
  bool sharded_;
  std::unique_ptr<DeviceRowOptimizer> rows_;  // sharded only
  std::vector<std::vector<float>> host_rows_;  // row_slices()' copies
  std::string optimizer_;                       // its name: the prefix of the backbone's scalars
};

}  // namespace fastnn::runner
