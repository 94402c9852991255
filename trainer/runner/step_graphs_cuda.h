// CUDA graphs of the CUDA runner's training step (StepRunnerOptions::cuda_graphs; CUDA builds only).
//
// After two eager steps of a batch shape (every buffer, workspace and algorithm is then in place), the
// runner's queued step — forward, losses, backward, counts, the three update launches — is captured into a
// CUDA graph and replayed: the host launches one graph instead of hundreds of kernels. What changes from
// step to step is read from device memory written by one small launch before each replay (StepArgs: the
// dropout / drop_path step through Graph::set_device_step, the learning rate through
// DeviceOptimizer::decide(lr_on_device)); the loss-scale seed and the optimizer's decision already come
// from the device. The batch's device buffers differ per input stage, and a graph's label-check slots
// must not be rewritten before they are read, so there is one graph per (images, labels, results slot):
// at most 3 x 2 (kMaxGraphs; a step beyond them runs eagerly). A new batch shape or label dtype and
// evaluation drop them (buffers may move) and two eager steps come first again. A capture that fails
// turns graphs off with a warning. Not thread-safe; the runner's thread and stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "trainer/cuda/runtime.h"
#include "trainer/runner/step_kernels.h"
#include "trainer/tensor.h"

namespace fastnn::runner {

class StepGraphs {
 public:
  // The step's launches for a capture: they read the step and the learning rate from `args` (device memory).
  using Record = std::function<void(const cuda_step::StepArgs* args)>;

  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // The batch of the next step (train() and queue_train() alike, so bench train's warm-up counts): a new
  // shape or label dtype drops the graphs and the two eager steps a capture waits for start again.
  void note_batch(const Tensor& x, const Tensor& y);
  void count_eager_step() { ++eager_steps_; }

  // Launches the step for this batch and results slot from its graph (capturing it with `record` first
  // when needed): false when it must run eagerly (too few eager steps, no room, graphs off after a failure).
  bool replay(const Tensor& x, const Tensor& y, uint64_t step, float lr, int slot, const Record& record);

  // Every graph (evaluation may resize the buffers they point into). A queued step's label checks may
  // still read a graph's slots: they stay until release_retired() or the end.
  void drop();
  // Frees the dropped graphs' label-check slots; the caller has nothing queued (any check a half-queued
  // step left is dropped first).
  void release_retired();

  int64_t replays() const { return replays_; }

 private:
  struct Captured {
    cudaGraphExec_t exec = nullptr;
    std::unique_ptr<cuda::LabelCheckCapture> checks;
    const void* images = nullptr;
    const void* labels = nullptr;
    int slot = 0;
    ~Captured();
  };
  // The loop's steady state: three input stages x two results slots.
  static constexpr size_t kMaxGraphs = 6;

  Captured* capture(const Tensor& x, const Tensor& y, int slot, const Record& record);
  cuda_step::StepArgs* args() { return static_cast<cuda_step::StepArgs*>(args_.raw()); }

  std::vector<std::unique_ptr<Captured>> graphs_;
  std::vector<std::unique_ptr<cuda::LabelCheckCapture>> retired_checks_;
  Tensor args_;  // the device StepArgs the graphs read
  std::pair<Shape, DType> batch_{{}, DType::kF32};
  int64_t eager_steps_ = 0, replays_ = 0;
  bool failed_ = false;
};

}  // namespace fastnn::runner
