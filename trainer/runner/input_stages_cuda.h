// The CUDA step runner's host -> device hop for batches (CUDA builds only; step_runner.h describes the
// contract): the pipeline's batch buffers in pinned memory (allocator()), three stages each holding a
// batch's device copy, its copy on a stream of its own, and the events that order a stage's reuse after
// the step that read it. place() hands the step its batch as device tensors in the compute dtype and the
// graph's layout (uint8 normalised with the preset's mean and 1/std); prefetch() starts the next batch's
// copy early.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <utility>

#include "pipeline/batch.h"
#include "trainer/runner/input_format.h"
#include "trainer/tensor.h"

namespace fastnn::runner {

class InputStages {
 public:
  // Batches become the graph's input: `compute` dtype in `graph_layout` (kNCHW or kNHWC). Creates the
  // copy stream and events.
  InputStages(DType compute, const InputNormalization& norm, Layout graph_layout);
  ~InputStages();
  InputStages(const InputStages&) = delete;
  InputStages& operator=(const InputStages&) = delete;

  // The pipeline's buffers in page-locked memory: copies start from them directly.
  std::shared_ptr<pipeline::BatchAllocator> allocator() const { return allocator_; }
  // Starts the copy of the batch the next place() will get (device tensors: nothing to do).
  void prefetch(const Tensor& images, const Tensor& labels);
  // The batch on the device for the compute stream's next work (device tensors pass through).
  std::pair<Tensor, Tensor> place(const Tensor& images, const Tensor& labels);
  // The compute stream's work that reads the placed batch is queued: its stage may be reused after it.
  void release();

 private:
  // One of the input slots: pinned host copy, device copy, and the events ordering their reuse.
  // dev_raw: the host batch's bytes on the device (its dtype and layout); dev_images: the graph's input
  // (compute dtype, the graph's layout; dev_raw itself when nothing needs converting). host_images: the pipeline's
  // pinned batch, kept alive until this stage is reused (its copy is done by then).
  struct Stage {
    Tensor pinned_images, pinned_labels, dev_raw, dev_images, dev_labels, host_images;
    cudaEvent_t copied = nullptr, consumed = nullptr;
    bool used = false;
    // Set by prefetch(): the host batch this stage's copy holds, until a train() takes it.
    const void* pending_images = nullptr;
    const void* pending_labels = nullptr;
    int64_t placed = -1;  // the order of its last place() (stage_rotation.h); -1: never placed
  };

  Stage& free_stage();
  void copy_to_stage(Stage& s, const Tensor& images, const Tensor& labels);
  void convert_input(const Tensor& raw, bool nhwc, const Shape& nchw, Tensor& out);

  DType compute_;
  bool graph_nhwc_ = false;
  InputNormalization norm_;
  cudaStream_t copy_stream_ = nullptr;
  // Three: the step the device runs, the step the host queues behind it (StepRunner::queue_train reads
  // results one step late, so the host runs a step ahead) and the prefetched next batch; a stage is
  // reused only after the step that read it, so two would make the host wait for the device. Which one
  // a copy reuses: stage_rotation.h.
  static constexpr size_t kStages = 3;
  Stage stages_[kStages];
  int64_t placements_ = 0;
  Stage* current_stage_ = nullptr;
  std::shared_ptr<pipeline::BatchAllocator> allocator_;
};

}  // namespace fastnn::runner
