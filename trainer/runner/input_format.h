// What the pipeline hands the step runner, and how the runner turns it into the graph's input.
//
// The runner says which batches it reads fastest (StepRunner::batch_format): the CPU runner float32
// NCHW in ordinary memory (the pipeline normalises, the graph reads the batch buffer itself); the CUDA
// runner by default uint8 NHWC in pinned memory — a quarter of float32's bytes over PCIe, copied
// straight from the pipeline's buffer on a copy stream — normalised, transposed to NCHW and cast to the
// compute dtype on the GPU with the preset's mean and 1/std (InputNormalization). input_dtype=float16
// or float32 keep the normalisation in the pipeline (pinned too on the GPU).
//
// For integer pixel values (every preset's copy mode: lenet, cifarnet's crops) the uint8 path equals
// the float32 pipeline bitwise: both compute (v - mean[c]) * inv_std[c] in float from the same v.
// Presets that interpolate (inception, vgg, resnet) round the interpolated pixel to uint8 first, as
// DALI's and most GPU pipelines' uint8 outputs do.
#pragma once

#include <memory>
#include <string>

#include "pipeline/batch.h"
#include "trainer/tensor.h"

namespace fastnn::runner {

struct BatchFormat {
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  std::shared_ptr<pipeline::BatchAllocator> allocator;  // nullptr: ordinary host memory
  std::string describe() const;
};

// The preset's per-channel normalisation, applied to uint8 batches by the step runner.
struct InputNormalization {
  float mean[4] = {0, 0, 0, 0};
  float inv_std[4] = {1, 1, 1, 1};
};

// The batch format input_dtype asks for (auto: `device_default`); ConfigError for an unknown name.
BatchFormat batch_format_for(const std::string& input_dtype, const BatchFormat& device_default);

// The reference of the device kernel: host images (uint8, float16 or float32; NHWC or NCHW) to a new
// float32 NCHW tensor; uint8 values are normalised, the others only converted.
Tensor normalize_input_reference(const Tensor& images, const InputNormalization& norm);

}  // namespace fastnn::runner
