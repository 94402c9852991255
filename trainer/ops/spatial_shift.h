// spatial_shift: moves an NCHW image by whole pixels, zero filling what comes in from outside:
//   y[n, c, i, j] = x[n, c, i + dy, j + dx]  where that index is inside the image, else 0.
// Shape is kept. TF-slim's NASNet factorized reduction pads bottom/right by one and crops the top-left
// (tf.pad(x, [[0,0],[0,1],[0,1],[0,0]])[:, 1:, 1:, :]), which is spatial_shift with dy = dx = 1; a
// 1x1 stride-2 average pool after it then reads the odd rows and columns the first path skips.
// Attributes: dy, dx (integers in [-2^20, 2^20], default 1).
// Backward: dx_in[n, c, i, j] = dy_out[n, c, i - dy, j - dx] where inside, else 0 (the transpose).
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_spatial_shift(OpRegistry& registry);

namespace cpu {
// planes = N * C; y[p, i, j] = x[p, i + sy, j + sx] or 0. The backward is the same call with -sy, -sx.
template <typename T>
void spatial_shift(int64_t planes, int64_t h, int64_t w, int64_t sy, int64_t sx, const T* x, T* y);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launcher (ops/spatial_shift_cuda.cu): the CPU function's name and arguments plus a stream; T is
// float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void spatial_shift(int64_t planes, int64_t h, int64_t w, int64_t sy, int64_t sx, const T* x, T* y, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (spatial_shift_cuda.cu); register_spatial_shift adds it.
void register_spatial_shift_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
