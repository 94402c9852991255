// The hop from the pipeline to the step without copies: the batch's own buffer becomes the images
// tensor, its label array the labels tensor. Both tensors' storages share the BatchHandle, so the
// buffer returns to the pipeline's pool only when the last reference drops (the step, or a CUDA
// runner's staging waiting for its copy, may hold it past the loop's next batch).
//
//   BatchTensors t = wrap_batch(std::move(handle));   // handle is empty afterwards
//   runner.train(t.images, t.labels, step, lr);        // t.images.raw() == the batch's data()
//
// Images: [N, C, H, W] for NCHW batches, [N, H, W, C] for NHWC, in the batch's dtype (f32, f16, u8),
// host memory (pinned when the pipeline's BatchAllocator gave pinned memory). Labels: [N] int32.
// The step runners take what they can use: the CPU graph f32 NCHW (anything else is refused with the
// batch's description).
#pragma once

#include "pipeline/batch_iterator.h"
#include "trainer/tensor.h"

#include <vector>

namespace fastnn::runner {

struct BatchTensors {
  Tensor images, labels;
  // The batch's mixup / CutMix weight of each sample's own label (pipeline::Batch::mix_weights; empty: not
  // mixed).
  std::vector<double> mix_weights;
};

BatchTensors wrap_batch(pipeline::BatchHandle&& batch);

}  // namespace fastnn::runner
