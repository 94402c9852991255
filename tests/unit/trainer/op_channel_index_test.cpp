// The index math of the per-channel CUDA kernels (trainer/ops/channel_index.h), walked on the CPU exactly
// as the kernels walk it: every block (channel, run) and every thread of its stride. Each value of each
// channel is visited once and only by its channel's blocks, runs tile the channel in order, the flat
// channel_of equals (i / hw) % C, and a reduction over runs equals the plain per-channel sum — for the
// shapes of real layers (ResNet-50 at batch 256, a 7x7 stage, a rank-2 batch norm) and small odd ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "trainer/ops/channel_index.h"

namespace fastnn::ops {
namespace {

constexpr int64_t kThreads = 512;  // channel_sums.cuh's kReduceThreads

struct Shape3 {
  int64_t n, c, hw;
};

// Visits (offset) of run `run` of channel `c` as the block's threads do, thread by thread.
template <typename F>
void walk_run(const Shape3& s, const BnSplit& sp, int64_t c, int64_t run, F&& f) {
  const int64_t m = s.n * s.hw, begin = run * sp.run_length;
  const int64_t end = std::min(m, begin + sp.run_length);
  const FastDivide hw_div = hw_divider(s.hw);
  const bool fast = FastDivide::fits(m);
  for (int64_t t = 0; t < kThreads; ++t)
    for (int64_t j = begin + t; j < end; j += kThreads) f(channel_offset(j, c, s.c, s.hw, hw_div, fast));
}

TEST(ChannelIndex, RunsCoverEveryValueOfTheirChannelOnce) {
  for (const Shape3 s : {Shape3{3, 5, 7}, Shape3{2, 1, 1}, Shape3{64, 3, 1}, Shape3{4, 16, 196}, Shape3{2, 64, 3136},
                         Shape3{1, 2, 100000}}) {
    const BnSplit sp = bn_split(s.n, s.c, s.hw);
    const int64_t total = s.n * s.c * s.hw;
    ASSERT_GE(sp.runs, 1);
    ASSERT_GE(sp.runs * sp.run_length, s.n * s.hw);
    ASSERT_LT((sp.runs - 1) * sp.run_length, s.n * s.hw) << "an empty run";
    std::vector<int> seen(static_cast<size_t>(total), 0);
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t r = 0; r < sp.runs; ++r)
        walk_run(s, sp, c, r, [&](int64_t o) {
          ASSERT_GE(o, 0);
          ASSERT_LT(o, total);
          ASSERT_EQ((o / s.hw) % s.c, c) << "offset " << o << " is not in channel " << c;
          ++seen[static_cast<size_t>(o)];
        });
    for (int64_t o = 0; o < total; ++o) ASSERT_EQ(seen[static_cast<size_t>(o)], 1) << "offset " << o;
  }
}

TEST(ChannelIndex, SplitFillsTheGpuForFewChannelsAndKeepsRunsLong) {
  const BnSplit first = bn_split(256, 64, 112 * 112);  // ResNet-50's first batch norm at batch 256
  EXPECT_EQ(first.runs, 16);  // 64 x 16 = 1024 blocks (the old kernels: 64)
  const BnSplit last = bn_split(256, 2048, 49);
  EXPECT_EQ(last.runs, 1);  // 2048 blocks already
  const BnSplit tiny = bn_split(2, 8, 9);
  EXPECT_EQ(tiny.runs, 1);  // 18 values: one run
  EXPECT_EQ(bn_split(0, 8, 9).runs, 1);
}

TEST(ChannelIndex, FlatChannelEqualsDivision) {
  for (const Shape3 s : {Shape3{3, 5, 7}, Shape3{2, 64, 49}, Shape3{1, 1, 1}, Shape3{7, 3, 1}}) {
    const ChannelIndex ix = channel_index(s.n, s.c, s.hw);
    EXPECT_TRUE(ix.fast);
    for (int64_t i = 0; i < s.n * s.c * s.hw; ++i) ASSERT_EQ(channel_of(i, ix), (i / s.hw) % s.c) << i;
  }
  // Past 2^31 values: plain division, still right.
  const ChannelIndex big = channel_index(256, 64, 1 << 20);
  EXPECT_FALSE(big.fast);
  const int64_t i = (int64_t{1} << 33) + 12345;
  EXPECT_EQ(channel_of(i, big), (i / (1 << 20)) % 64);
}

TEST(ChannelIndex, SumOverRunsEqualsThePlainChannelSum) {
  const Shape3 s{8, 3, 1500};  // 12000 values a channel: 2 runs
  const BnSplit sp = bn_split(s.n, s.c, s.hw);
  ASSERT_EQ(sp.runs, 2);
  std::vector<double> x(static_cast<size_t>(s.n * s.c * s.hw));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 1000);  // integers: exact sums
  for (int64_t c = 0; c < s.c; ++c) {
    double runs_total = 0, plain = 0;
    for (int64_t r = 0; r < sp.runs; ++r) walk_run(s, sp, c, r, [&](int64_t o) { runs_total += x[static_cast<size_t>(o)]; });
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t i = 0; i < s.hw; ++i) plain += x[static_cast<size_t>((n * s.c + c) * s.hw + i)];
    EXPECT_EQ(runs_total, plain) << "channel " << c;
  }
}

// The rows kernels (hw = 1: NHWC seen as [N*H*W, C], or 2-D): block (tile, run) with threads (x: the
// channel lane, y: the row lane), as batch_norm_kernels.cu's bn_rows_* and reduce_kernels.cu's bias_rows
// kernels walk it.
template <typename F>
void walk_rows(int64_t m, int64_t c, const BnSplit& sp, F&& f) {
  for (int64_t tile = 0; tile < row_channel_tiles(c); ++tile)
    for (int64_t run = 0; run < sp.runs; ++run)
      for (int64_t tx = 0; tx < kRowChannels; ++tx) {
        const int64_t ch = tile * kRowChannels + tx;
        if (ch >= c) continue;
        const RowRun rr = row_run(sp, m, run);
        for (int64_t ty = 0; ty < kRowLanes; ++ty)
          for (int64_t r = rr.begin + ty; r < rr.end; r += kRowLanes) f(r * c + ch, ch, run);
      }
}

TEST(ChannelIndex, RowRunsCoverEveryValueOfTheirChannelOnce) {
  for (auto [m, c] : {std::pair<int64_t, int64_t>{7, 5}, {1, 1}, {3000, 33}, {100000, 3}, {64, 2048}, {1, 70}}) {
    const BnSplit sp = bn_split_rows(m, c);
    ASSERT_GE(sp.runs, 1);
    ASSERT_GE(sp.runs * sp.run_length, m);
    ASSERT_LT((sp.runs - 1) * sp.run_length, m) << "an empty run";
    std::vector<int> seen(static_cast<size_t>(m * c), 0);
    walk_rows(m, c, sp, [&](int64_t o, int64_t ch, int64_t) {
      ASSERT_LT(o, m * c);
      ASSERT_EQ(o % c, ch);
      ++seen[static_cast<size_t>(o)];
    });
    for (int64_t o = 0; o < m * c; ++o) ASSERT_EQ(seen[static_cast<size_t>(o)], 1) << "offset " << o;
  }
}

TEST(ChannelIndex, RowSplitFillsTheGpuAndKeepsRunsLong) {
  const BnSplit first = bn_split_rows(256 * 112 * 112, 64);  // ResNet-50's first batch norm in NHWC
  EXPECT_EQ(first.runs, 512);                                 // 2 channel tiles x 512 runs
  EXPECT_GE(first.run_length, kMinRunRows);
  const BnSplit last = bn_split_rows(256 * 49, 2048);
  EXPECT_EQ(last.runs, 16);  // 64 tiles x 16 runs of 784 rows
  EXPECT_EQ(bn_split_rows(256, 512).runs, 1);  // a 2-D batch norm of an embedding: one run
  EXPECT_EQ(channel_split(256, 512, 1).runs, bn_split_rows(256, 512).runs);
  EXPECT_EQ(channel_split(256, 64, 3136).runs, bn_split(256, 64, 3136).runs);
}

// The packed kernels' split: blocks = packed tiles x runs near kPackedBlocks for every batch norm of
// ResNet-50 at batch 256 in f16 and f32 (bn_split_rows gave the packed kernels 128 in f16), runs of at
// least kPackedMinRunRows rows, and small layers still split.
TEST(ChannelIndex, PackedSplitFillsTheGpuForEveryResNet50BatchNorm) {
  const std::pair<int64_t, int64_t> layers[] = {{256 * 112 * 112, 64}, {256 * 56 * 56, 64}, {256 * 56 * 56, 256},
                                                {256 * 28 * 28, 128},  {256 * 28 * 28, 512}, {256 * 14 * 14, 256},
                                                {256 * 14 * 14, 1024}, {256 * 7 * 7, 512},   {256 * 7 * 7, 2048}};
  for (int v : {8, 4})
    for (auto [m, c] : layers) {
      SCOPED_TRACE(std::to_string(m) + " rows x " + std::to_string(c) + " channels, " + std::to_string(v) + " a pack");
      const BnSplit sp = packed_rows_split(m, c, v);
      const int64_t blocks = packed_tiles(c, v) * sp.runs;
      EXPECT_GE(blocks, m >= kPackedBlocks * kPackedMinRunRows ? kPackedBlocks / 2 : std::min<int64_t>(m / kPackedMinRunRows, 64));
      EXPECT_LE(blocks, 2 * kPackedBlocks);
      EXPECT_GE(sp.run_length, std::min(m, kPackedMinRunRows));
      EXPECT_GE(sp.runs * sp.run_length, m);
      EXPECT_LT((sp.runs - 1) * sp.run_length, m) << "an empty run";
      EXPECT_LE(sp.runs, 65535) << "the grid's y";
    }
  EXPECT_EQ(packed_tiles(64, 8), 1);    // 8 packs side by side
  EXPECT_EQ(packed_tiles(2048, 8), 8);  // 256 packs, 32 a block
  EXPECT_EQ(packed_tiles(2048, 4), 16);
  EXPECT_EQ(packed_rows_split(0, 64, 8).runs, 1);
  EXPECT_EQ(packed_rows_split(100, 64, 8).runs, 1);
}

TEST(ChannelIndex, RowRunSumsEqualThePlainChannelSum) {
  const int64_t m = 5000, c = 37;
  const BnSplit sp = bn_split_rows(m, c);
  ASSERT_GT(sp.runs, 1);
  std::vector<double> x(static_cast<size_t>(m * c));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 1000);
  std::vector<double> by_runs(static_cast<size_t>(c), 0), plain(static_cast<size_t>(c), 0);
  walk_rows(m, c, sp, [&](int64_t o, int64_t ch, int64_t) { by_runs[static_cast<size_t>(ch)] += x[static_cast<size_t>(o)]; });
  for (int64_t r = 0; r < m; ++r)
    for (int64_t ch = 0; ch < c; ++ch) plain[static_cast<size_t>(ch)] += x[static_cast<size_t>(r * c + ch)];
  EXPECT_EQ(by_runs, plain);
}

}  // namespace
}  // namespace fastnn::ops
