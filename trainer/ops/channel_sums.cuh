// Per-channel sums over runs, shared by batch norm's kernels (batch_norm_kernels.cu) and the bias
// gradient's (reduce_kernels.cu). Per-channel sums come in two shapes: [N, C, hw] with blocks per
// (channel, run), and [M, C] rows (hw == 1: NHWC activations, rank-2 inputs) with blocks per (32
// channels, run of rows). One channel's m = N*hw values (N planes of hw, a stride of C*hw apart) are cut
// into equal runs (BnSplit, channel_index.h: a function of the shape only); a finishing kernel adds the
// runs' partial sums (warp_sum_runs). Sums run in double (like the CPU oracle) in a fixed order for a
// given shape, so results are bitwise repeatable run to run (no floating-point atomics). Include only from
// .cu files.
#pragma once

#include <cstdint>

#include "core/fast_divide.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/batch_norm.h"
#include "trainer/ops/channel_index.h"

namespace fastnn::ops::gpu::sums {

inline constexpr int kReduceThreads = 512;

// hw == 1 (NHWC as [N*H*W, C] rows, or rank 2): the rows kernels; else blocks per (channel, run).
inline BnSplit bn_split(const BatchNormParams& p) { return ops::channel_split(p.n, p.c, p.hw); }
inline bool by_rows(const BatchNormParams& p) { return p.hw == 1; }
inline dim3 rows_grid(const BatchNormParams& p, const BnSplit& sp) {
  return dim3(static_cast<unsigned>(row_channel_tiles(p.c)), static_cast<unsigned>(sp.runs));
}
inline dim3 rows_block() { return dim3(static_cast<unsigned>(kRowChannels), static_cast<unsigned>(kRowLanes)); }
inline FastDivide hw_divider(const BatchNormParams& p) { return ops::hw_divider(p.hw); }

// Calls f(offset) for every value of run `run` of channel `c`, the block's threads striding through it
// (consecutive threads read consecutive addresses inside a plane).
template <typename F>
__device__ __forceinline__ void for_channel_run(const BatchNormParams& p, const BnSplit& sp, const FastDivide& hw_div,
                                                int64_t c, int64_t run, F&& f) {
  const int64_t m = p.n * p.hw, begin = run * sp.run_length;
  const int64_t end = begin + sp.run_length < m ? begin + sp.run_length : m;
  const bool fast = FastDivide::fits(m);
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) f(channel_offset(j, c, p.c, p.hw, hw_div, fast));
}

// ---- the same sums over [M, C] rows (hw == 1: NHWC activations, rank-2 inputs) ----
// Block (tile, run), threads (x: one of kRowChannels consecutive channels, y: one of kRowLanes row
// lanes): a warp reads 32 neighbouring channels of a row (coalesced; a block per channel would read
// with a stride of C). Each thread sums its rows of the run in order, then the row lanes' sums are
// added in lane order and written where the (channel, run) kernels write theirs, so the finishing
// kernels are shared. Calls f(offset) for the thread's values of channel ch.
template <typename F>
__device__ __forceinline__ void for_rows_run(const BatchNormParams& p, const BnSplit& sp, int64_t ch, F&& f) {
  if (ch >= p.c) return;
  const RowRun rr = row_run(sp, p.n, blockIdx.y);
  for (int64_t r = rr.begin + threadIdx.y; r < rr.end; r += kRowLanes) f(r * p.c + ch);
}

// The block's per-lane sums (width 1 or 2 values each) added over the row lanes in order and stored as
// partials[(ch * runs + run) * width + j].
__device__ __forceinline__ void store_rows_partials(const BatchNormParams& p, const BnSplit& sp, int64_t ch, int width,
                                                    double v0, double v1, double* partials) {
  __shared__ double lanes[2][kRowLanes][kRowChannels];
  lanes[0][threadIdx.y][threadIdx.x] = v0;
  lanes[1][threadIdx.y][threadIdx.x] = v1;
  __syncthreads();
  if (threadIdx.y != 0 || ch >= p.c) return;
  for (int j = 0; j < width; ++j) {
    double acc = 0;
    for (int l = 0; l < kRowLanes; ++l) acc += lanes[j][l][threadIdx.x];
    partials[(ch * sp.runs + blockIdx.y) * width + j] = acc;
  }
}

__device__ __forceinline__ int64_t rows_channel() {
  return static_cast<int64_t>(blockIdx.x) * kRowChannels + threadIdx.x;
}

}  // namespace fastnn::ops::gpu::sums
