// The head's class split and memory per rank (trainer/head/head_memory.h), against values computed by
// hand, and the start-up line and refusal message.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/head/head_memory.h"
#include "trainer/head/partial_fc.h"

namespace fastnn::head {
namespace {

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(ClassRange, FirstRanksTakeTheRemainder) {
  EXPECT_EQ(class_range(10, 3, 0), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(class_range(10, 3, 1), (std::pair<int64_t, int64_t>{4, 7}));
  EXPECT_EQ(class_range(10, 3, 2), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(class_range(2, 3, 2), (std::pair<int64_t, int64_t>{2, 2}));  // fewer classes than ranks
  EXPECT_EQ(class_range(int64_t{3} << 31, 2, 1), (std::pair<int64_t, int64_t>{int64_t{3} << 30, int64_t{3} << 31}));
}

TEST(ClassRange, TilesAllClassesWithSizesDifferingByAtMostOne) {
  for (int64_t k : {1, 7, 64, 1000003}) {
    for (int w : {1, 2, 3, 7, 8, 13}) {
      int64_t next = 0, lo = k, hi = 0;
      for (int r = 0; r < w; ++r) {
        const auto [b, e] = class_range(k, w, r);
        EXPECT_EQ(b, next) << k << "/" << w << " rank " << r;
        lo = std::min(lo, e - b);
        hi = std::max(hi, e - b);
        next = e;
      }
      EXPECT_EQ(next, k);
      EXPECT_LE(hi - lo, 1);
    }
  }
  EXPECT_THROW(class_range(10, 0, 0), Error);
  EXPECT_THROW(class_range(10, 2, 2), Error);
  EXPECT_THROW(class_range(-1, 2, 0), Error);
}

TEST(HeadMemory, TenMillionClassesFp32MomentumOnEightRanks) {
  const auto m = head_memory(10000000, 512, 8, 0, 1024, 1.0, 4, 1, false);
  EXPECT_EQ(m.rows, 1250000);
  EXPECT_EQ(m.sampled_rows, 1250000);
  EXPECT_EQ(m.weights, 2560000000);          // 1.25e6 x 512 x 4
  EXPECT_EQ(m.gradients, 2560000000);        // every row
  EXPECT_EQ(m.optimizer_state, 2560000000);  // one f32 slot
  EXPECT_EQ(m.sampled_weights, 0);           // no PartialFC copy at ratio 1
  EXPECT_EQ(m.features, 6291456);            // 1024 x 512 x 4 x 3
  EXPECT_EQ(m.logits, 10240000000);          // 1024 x 1.25e6 x 4 x 2
  EXPECT_EQ(m.total, 17926291456);
}

TEST(HeadMemory, PartialFcFp16MasterCopyAdam) {
  const auto m = head_memory(10000000, 512, 8, 7, 1024, 0.1, 2, 2, true);
  EXPECT_EQ(m.rows, 1250000);
  EXPECT_EQ(m.first_row, 8750000);
  // ceil(125000 + 6 x sqrt(1.25e6 x 0.1 x 0.9) = 2012.46) = 127013, plus 1024 possible positives.
  EXPECT_EQ(m.sampled_rows, 128037);
  EXPECT_EQ(m.weights, 3840000000);          // 1.25e6 x 512 x (2 + 4)
  EXPECT_EQ(m.gradients, 131109888);         // 128037 x 512 x 2
  EXPECT_EQ(m.optimizer_state, 5120000000);  // 1.25e6 x 512 x 4 x 2
  EXPECT_EQ(m.logits, 1048879104);           // 1024 x 128037 x 8
  EXPECT_EQ(m.sampled_weights, 131109888);   // the compact copy of the used rows, f16
  EXPECT_EQ(m.features, 6291456);
  EXPECT_EQ(m.total, 3840000000 + 131109888 + 5120000000 + 6291456 + 1048879104 + 131109888);
}

TEST(HeadMemory, UnevenSplitAndSmallShares) {
  auto m = head_memory(10, 4, 3, 2, 2, 1.0, 4, 0, false);
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.weights, 48);
  EXPECT_EQ(m.optimizer_state, 0);
  EXPECT_EQ(m.logits, 48);    // 2 x 3 x 8
  EXPECT_EQ(m.features, 96);  // 2 x 4 x 12
  EXPECT_EQ(m.total, 48 + 48 + 96 + 48);
  // Evaluation scores every row of a rank's batch: below sample_ratio ~ 1/(2W) its logits are the larger.
  m = head_memory(100000, 8, 1, 0, 1024, 0.1, 4, 0, false);
  EXPECT_EQ(m.logits, 1024 * 100000 * 4);
  m = head_memory(100000, 8, 2, 0, 1024, 0.1, 4, 0, false);
  EXPECT_EQ(m.logits, 512 * 50000 * 4);
  m = head_memory(100, 4, 1, 0, 16, 0.5, 4, 0, false);
  EXPECT_EQ(m.sampled_rows, 96);  // 50 + 6 x 5 = 80, plus 16 positives
  m = head_memory(1000, 4, 1, 0, 16, 0.5, 4, 0, false);
  EXPECT_EQ(m.sampled_rows, 500 + 95 + 16);  // ceil(6 x sqrt(250)) = ceil(94.87)
}

TEST(HeadMemory, SampledRowsBoundHoldsForTheRealSampler) {
  const auto m = head_memory(100000, 8, 1, 0, 1024, 0.1, 4, 0, false);
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < 1024; ++i) pos.push_back(i * 97);
  for (uint64_t step = 0; step < 50; ++step)
    EXPECT_LE(static_cast<int64_t>(sample_classes(9, step, 0, 100000, 0.1, pos).size()), m.sampled_rows) << step;
}

TEST(HeadMemory, RejectsImpossibleInputsAndOverflow) {
  EXPECT_THROW(head_memory(0, 512, 1, 0, 8, 1, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 0, 1, 0, 8, 1, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 0, 0, 8, 1, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 1, 0, 0, 1, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 1, 0, 8, 0, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 1, 0, 8, 1.5, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 1, 0, 8, 1, 8, 0, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 1, 0, 8, 1, 4, -1, false), ConfigError);
  EXPECT_THROW(head_memory(10, 512, 2, 2, 8, 1, 4, 0, false), Error);
  EXPECT_THROW(head_memory(int64_t{1} << 62, 1024, 1, 0, 8, 1, 4, 0, false), ConfigError);
  EXPECT_THROW(head_memory(int64_t{1} << 40, 512, 1, 0, int64_t{1} << 30, 1, 4, 0, false), ConfigError);
}

TEST(BytesText, BinaryUnitsThreeDigits) {
  EXPECT_EQ(bytes_text(0), "0 B");
  EXPECT_EQ(bytes_text(1023), "1023 B");
  EXPECT_EQ(bytes_text(1024), "1.00 KiB");
  EXPECT_EQ(bytes_text(1536), "1.50 KiB");
  EXPECT_EQ(bytes_text(10 << 20), "10.0 MiB");
  EXPECT_EQ(bytes_text(256 << 20), "256 MiB");
  EXPECT_EQ(bytes_text(1048575), "1.00 MiB");  // 1023.999 KiB rounds into the next unit
  EXPECT_EQ(bytes_text(2560000000), "2.38 GiB");
  EXPECT_EQ(bytes_text(17924194304), "16.7 GiB");
}

TEST(HeadMemoryText, StartupLineNamesRangeAndParts) {
  const auto line = head_memory_text(head_memory(10000000, 512, 8, 1, 1024, 1.0, 4, 1, false));
  EXPECT_TRUE(contains(line, "rank 1 of 8")) << line;
  EXPECT_TRUE(contains(line, "classes [1250000, 2500000) (1250000 rows x 512)")) << line;
  EXPECT_TRUE(contains(line, "weights 2.38 GiB + gradients 2.38 GiB + optimizer state 2.38 GiB")) << line;
  EXPECT_TRUE(contains(line, "logits 9.54 GiB (batch 1024 x 1250000 f32, and gradient) = 16.7 GiB")) << line;
  const auto sampled = head_memory_text(head_memory(10000000, 512, 8, 0, 1024, 0.1, 2, 2, true));
  EXPECT_TRUE(contains(sampled, "at most 128037 used per step at sample_ratio 0.1")) << sampled;
  EXPECT_TRUE(contains(sampled, "with an f32 master copy")) << sampled;
  EXPECT_TRUE(contains(sampled, "+ sampled rows' copy 125 MiB + features 6.00 MiB")) << sampled;
}

TEST(HeadMemoryText, RefusalGivesNumbersAndTheRanksThatWouldFit) {
  const int64_t gib = int64_t{1} << 30;
  const auto m = head_memory(10000000, 512, 2, 0, 1024, 1.0, 4, 1, false);
  const auto msg = head_memory_refusal(m, 16 * gib, "GPU 0");
  const int64_t w = min_world_size(m, 16 * gib);
  // By hand: at W ranks rank 0 needs ceil(1e7/W) rows x (512 x 4 x 3 + 1024 x 8 = 14336 bytes) + 6 MiB of
  // features; 16 GiB holds (17179869184 - 6291456) / 14336 = 1197954 rows: W = 9 (1111112 rows), not 8 (1250000).
  EXPECT_EQ(w, 9);
  for (int64_t world : {w - 1, w}) {
    const auto rows = class_range(10000000, static_cast<int>(world), 0).second;
    EXPECT_EQ(head_memory(10000000, 512, static_cast<int>(world), 0, 1024, 1.0, 4, 1, false).total, rows * 14336 + 6291456);
  }
  EXPECT_TRUE(contains(msg, "does not fit: rank 0 of 2 needs ")) << msg;
  EXPECT_TRUE(contains(msg, str("(", m.total, " bytes) but GPU 0 has 16.0 GiB (", 16 * gib, " bytes)"))) << msg;
  EXPECT_TRUE(contains(msg, "optimizer state")) << msg;
  EXPECT_TRUE(contains(msg, str("fits on ", w, " or more ranks"))) << msg;
  EXPECT_TRUE(contains(msg, "f16 head weights")) << msg;
  EXPECT_THROW(head_memory_refusal(m, m.total, "GPU 0"), Error);
  // When the batch-sized parts alone are too big, no world size helps.
  const auto huge = head_memory(1000, 512, 1, 0, 1 << 20, 1.0, 4, 0, false);
  EXPECT_EQ(min_world_size(huge, 1 << 20), 0);
  EXPECT_TRUE(contains(head_memory_refusal(huge, 1 << 20, "host memory"), "No number of ranks fits"));
}

TEST(HeadMemory, MinWorldSizeIsTheFirstThatFits) {
  const auto m = head_memory(1000003, 128, 1, 0, 256, 0.1, 4, 2, false);
  for (int64_t avail : {int64_t{1} << 24, int64_t{1} << 27, int64_t{3} << 28, int64_t{1} << 32}) {
    const int64_t w = min_world_size(m, avail);
    ASSERT_GE(w, 1) << avail;
    EXPECT_LE(head_memory(1000003, 128, static_cast<int>(w), 0, 256, 0.1, 4, 2, false).total, avail);
    if (w > 1) {
      EXPECT_GT(head_memory(1000003, 128, static_cast<int>(w - 1), 0, 256, 0.1, 4, 2, false).total, avail);
    }
  }
}

TEST(DeviceLogits, BelowTwoToThe31ElementsPassAndTheRefusalSaysWhatToChange) {
  EXPECT_NO_THROW(check_device_logits(1024, 1250000, 1, 1.0));  // the 1.25 M x 512 measurement: 1.28e9
  EXPECT_NO_THROW(check_device_logits(1, kMaxDeviceLogits - 1, 1, 1.0));
  EXPECT_NO_THROW(check_device_logits(2, (kMaxDeviceLogits - 2) / 2, 1, 1.0));
  EXPECT_NO_THROW(check_device_logits(3, 0, 1, 1.0));  // a PartialFC step that sampled nothing here
  EXPECT_THROW(check_device_logits(1, kMaxDeviceLogits, 1, 1.0), Error);
  EXPECT_THROW(check_device_logits(2, kMaxDeviceLogits / 2, 1, 1.0), Error);  // exactly 2^31
  EXPECT_THROW(check_device_logits(3, kMaxDeviceLogits / 3 + 1, 1, 1.0), Error);
  try {
    check_device_logits(2048, 1250000, 8, 1.0);
    FAIL() << "2048 x 1250000 passed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "2048 samples x 1250000 classes = 2560000000 f32 values")) << m;
    EXPECT_TRUE(contains(m, "2147483648 (2^31)")) << m;
    EXPECT_TRUE(contains(m, "fewer samples per step")) << m;
    EXPECT_TRUE(contains(m, "2048 over 8 ranks")) << m;
    EXPECT_TRUE(contains(m, "more ranks")) << m;
    EXPECT_TRUE(contains(m, "--sample_ratio (now 1: PartialFC off)")) << m;
  }
  try {
    check_device_logits(4096, 600000, 1, 0.5);
    FAIL() << "4096 x 600000 passed";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "--sample_ratio (now 0.5)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "4096 over 1 rank)")) << e.what();
  }
  // No 64-bit overflow in the check or its message.
  EXPECT_THROW(check_device_logits(std::numeric_limits<int64_t>::max() / 2, std::numeric_limits<int64_t>::max(), 1, 1.0),
               Error);
}

}  // namespace
}  // namespace fastnn::head
