// Index math of the per-channel CUDA kernels on [N, C, hw] tensors (channel_sums.cuh, used by
// batch_norm_kernels.cu and reduce_kernels.cu), host and device (FASTNN_HD), so the CPU tests walk exactly
// what the kernels walk (channel_index_test):
//   - BnSplit: one channel's m = N*hw values cut into `runs` runs of `run_length` (the last may be
//     shorter), a function of the shape only, so a reduction over runs has a fixed order; about 1024
//     blocks in all, at least 4096 values a run. bn_split_rows: the same for [M, C] rows (hw = 1, NHWC),
//     where a block takes 32 channels of a run of rows; channel_split picks between them.
//   - channel_offset: where value j of channel c lives.
//   - ChannelIndex / channel_of: the channel of flat element i, by two FastDivide multiply-highs when
//     the tensor has fewer than 2^31 values (else 64-bit division).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/fast_divide.h"
#include "core/host_device.h"

namespace fastnn::ops {

struct BnSplit {
  int64_t runs = 1, run_length = 1;
};

// m values cut into about `runs` equal runs (at least one value each; the last may be shorter).
inline BnSplit split_into_runs(int64_t m, int64_t runs) {
  if (m <= 0) return {};
  BnSplit sp;
  sp.run_length = (m + runs - 1) / runs;
  sp.runs = (m + sp.run_length - 1) / sp.run_length;
  return sp;
}

inline BnSplit bn_split(int64_t n, int64_t c, int64_t hw) {
  const int64_t m = n * hw;
  if (m <= 0) return {};
  int64_t runs = std::max<int64_t>(1, 1024 / std::max<int64_t>(c, 1));
  runs = std::min(runs, std::max<int64_t>(1, m / 4096));
  return split_into_runs(m, runs);
}

// [M, C] row-major tensors (hw = 1: an NHWC activation seen as M = N*H*W rows of C channels, or a 2-D
// [N, C] one): a block of kRowLanes x kRowChannels threads takes kRowChannels consecutive channels (one
// warp reads them side by side: coalesced) of one run of rows, its row lanes striding through the run.
// Runs as bn_split's: a function of the shape only, about 1024 blocks in all, at least kMinRunRows rows
// a run.
inline constexpr int64_t kRowChannels = 32, kRowLanes = 8, kMinRunRows = 512;

inline int64_t row_channel_tiles(int64_t c) { return (std::max<int64_t>(c, 1) + kRowChannels - 1) / kRowChannels; }

inline BnSplit bn_split_rows(int64_t m, int64_t c) {
  if (m <= 0) return {};
  int64_t runs = std::max<int64_t>(1, 1024 / row_channel_tiles(c));
  runs = std::min(runs, std::max<int64_t>(1, m / kMinRunRows));
  return split_into_runs(m, runs);
}

// The packed rows kernels (bn_rows_packed.cuh, depthwise_nhwc_packed.cuh): a thread takes v channels
// (one 16-byte pack), a block px = min(C / v, 32) packs side by side, so a block covers up to 32 * v
// channels (256 in f16) where the generic rows kernels' covers 32. With bn_split_rows' runs (about 1024
// blocks of 32 channels) the packed reductions launched about 128 blocks — one per SM of an H100, too
// few loads in flight for a memory-bound pass (ResNet-50's batch norm ran at 40-60% of the bandwidth,
// H200 2026-11-27). Their own split: about kPackedBlocks blocks, runs of at least kPackedMinRunRows rows.
inline constexpr int64_t kPackedBlocks = 2048, kPackedMinRunRows = 256, kPackedMaxPacksSideBySide = 32;

inline int64_t packed_tiles(int64_t c, int v) {
  const int64_t packs = c / v, px = std::min<int64_t>(std::max<int64_t>(packs, 1), kPackedMaxPacksSideBySide);
  return (packs + px - 1) / px;
}

inline BnSplit packed_rows_split(int64_t m, int64_t c, int v) {
  if (m <= 0) return {};
  int64_t runs = std::max<int64_t>(1, kPackedBlocks / std::max<int64_t>(packed_tiles(c, v), 1));
  runs = std::min(runs, std::max<int64_t>(1, m / kPackedMinRunRows));
  return split_into_runs(m, runs);
}

// The rows [begin, end) of run `run` of an [m, C] tensor (the block's row lanes stride through them).
struct RowRun {
  int64_t begin = 0, end = 0;
};
FASTNN_HD inline RowRun row_run(const BnSplit& sp, int64_t m, int64_t run) {
  const int64_t begin = run * sp.run_length;
  return {begin, begin + sp.run_length < m ? begin + sp.run_length : m};
}

// The split the per-channel kernels use for [n, c, hw]: rows of channels when hw == 1, else bn_split.
inline BnSplit channel_split(int64_t n, int64_t c, int64_t hw) {
  return hw == 1 ? bn_split_rows(n, c) : bn_split(n, c, hw);
}

// Divides by hw when it fits FastDivide (the kernels check FastDivide::fits(N*hw) before using it).
inline FastDivide hw_divider(int64_t hw) {
  return FastDivide::fits(hw) && hw > 0 ? FastDivide(static_cast<uint32_t>(hw)) : FastDivide();
}

// Offset of value j (in [0, N*hw)) of channel c; fast: j < 2^31 and hw_div divides by hw.
FASTNN_HD inline int64_t channel_offset(int64_t j, int64_t c, int64_t channels, int64_t hw, const FastDivide& hw_div,
                                        bool fast) {
  const int64_t n = fast ? static_cast<int64_t>(hw_div.div(static_cast<uint32_t>(j))) : j / hw;
  return (n * channels + c) * hw + (j - n * hw);
}

struct ChannelIndex {
  FastDivide hw, channels;
  int64_t hw_value = 1, channel_count = 1;
  bool fast = false;
};

inline ChannelIndex channel_index(int64_t n, int64_t c, int64_t hw) {
  ChannelIndex ix;
  ix.hw_value = std::max<int64_t>(hw, 1);
  ix.channel_count = std::max<int64_t>(c, 1);
  ix.fast = FastDivide::fits(n * c * hw) && FastDivide::fits(ix.hw_value) && FastDivide::fits(ix.channel_count);
  if (ix.fast) {
    ix.hw = FastDivide(static_cast<uint32_t>(ix.hw_value));
    ix.channels = FastDivide(static_cast<uint32_t>(ix.channel_count));
  }
  return ix;
}

FASTNN_HD inline int64_t channel_of(int64_t i, const ChannelIndex& ix) {
  if (ix.fast) return ix.channels.mod(ix.hw.div(static_cast<uint32_t>(i)));
  return (i / ix.hw_value) % ix.channel_count;
}

}  // namespace fastnn::ops
