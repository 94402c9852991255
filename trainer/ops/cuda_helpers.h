// CUDA kernels shared by several ops (CUDA builds only): bias add and bias gradient for conv2d and
// fully_connected, the zero-padded copy / crop conv2d uses for asymmetric padding, and the NCHW <-> NHWC
// transpose (the layout adapter, the NHWC convolution's weights). The same
// conventions as the ops' launchers (T float, __half or __nv_bfloat16; device pointers; nothing allocates;
// ordered on `s`). bias_add, pad2d, crop2d, transpose_last2: ops/elementwise_kernels.cu; bias_grad: ops/reduce_kernels.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fastnn::ops::gpu {

// y[n, k, i] += b[k] for y [N, K, inner].
template <typename T>
void bias_add(int64_t n, int64_t k, int64_t inner, const T* b, T* y, cudaStream_t s);
// Zero-padded copy x [N*C, H, W] -> xp [N*C, H+top+bottom, W+left+right], and the inverse crop.
template <typename T>
void pad2d(int64_t planes, int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right,
           const T* x, T* xp, cudaStream_t s);
template <typename T>
void crop2d(int64_t planes, int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right,
            const T* xp, T* x, cudaStream_t s);
// db[k] = sum over n, i of dy[n, k, i] (dy [N, K, inner]); summed in double, in a fixed order. With a
// workspace of bias_grad_workspace_bytes(n, k, inner) bytes each channel is summed by many blocks (runs,
// as batch norm's statistics); ws null: one block per channel.
// NHWC tensors are [N*H*W, K, 1] to bias_add and bias_grad (one row of K channels per pixel).
size_t bias_grad_workspace_bytes(int64_t n, int64_t k, int64_t inner);
template <typename T>
void bias_grad(int64_t n, int64_t k, int64_t inner, const T* dy, T* db, void* ws, cudaStream_t s);

// y [B, cols, rows] = x [B, rows, cols], each of the B matrices transposed; elements of elem_bytes (2, 4
// or 8 bytes, copied, so exact for any dtype). NCHW -> NHWC is (B = N, rows = C, cols = H*W), NHWC ->
// NCHW is (N, H*W, C), convolution weights [K, C, R, S] -> [K, R, S, C] are (K, C, R*S).
// ops/elementwise_kernels.cu (32x32 tiles through shared memory: both sides read and write whole rows).
void transpose_last2(int64_t batch, int64_t rows, int64_t cols, size_t elem_bytes, const void* x, void* y,
                     cudaStream_t s);

}  // namespace fastnn::ops::gpu
