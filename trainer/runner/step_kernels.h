// The few kernels the GPU step runner needs beyond the ops and the fused optimizer updates
// (step_kernels.cu; include only from *_cuda.cpp / .cu files). T and G are float, __half or
// __nv_bfloat16; pointers are device pointers; nothing allocates or waits; launches are checked.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fastnn::runner::cuda_step {

// y[i] = x[i] rounded to T (nearest even): master weights -> compute copies, f32 images -> f16/bf16.
template <typename T>
void cast_from_f32(int64_t count, const float* x, T* y, cudaStream_t s);
// y[i] = x[i] widened to f32.
template <typename T>
void cast_to_f32(int64_t count, const T* x, float* y, cudaStream_t s);

// The input hop (input_format.h): images of n x c x h x w of source type S (uint8_t, __half or float;
// NHWC when src_nhwc, else NCHW) to T in the graph's layout (NHWC when dst_nhwc). uint8 values become
// (v - mean[c]) * inv_std[c] in float, the subtraction and product rounded separately
// (normalize_input_reference's arithmetic); the others are only converted. mean / inv_std: 4 floats
// each, by value.
struct InputNorm {
  float mean[4];
  float inv_std[4];
};
template <typename S, typename T>
void input_convert(int64_t n, int64_t c, int64_t h, int64_t w, const S* x, bool src_nhwc, bool dst_nhwc,
                   InputNorm norm, T* y, cudaStream_t s);

// What a step captured into a CUDA graph reads from device memory instead of its launch arguments (the
// dropout / drop_path step, the optimizer's learning rate), written before each replay by one launch
// whose arguments are the step's values.
struct StepArgs {
  uint64_t step;
  float lr;
};
void write_step_args(StepArgs* args, uint64_t step, float lr, cudaStream_t s);

}  // namespace fastnn::runner::cuda_step
