// stage_rotation.h: the CUDA runner's choice of input stage, checked on the host by replaying the
// training loop's calls (trainer.cpp: batch k+1 prefetched before step k is queued, results read one
// step late) against three stages, as InputStages does.
#include "trainer/runner/stage_rotation.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace fastnn::runner {
namespace {

// InputStages' bookkeeping without the device: which batch each stage holds and which step last read it.
class StageModel {
 public:
  // prefetch(batch): the stage the copy goes into; returns the step that last read it (-1: none).
  int64_t prefetch(int64_t batch) {
    const size_t i = pick();
    const int64_t reader = reader_[i];
    pending_[i] = batch;
    return reader;
  }
  // place(batch) for `step`: the prefetched stage, else a fresh copy (returns the step that last read
  // the stage it copies into, or -1; -2 when the batch was prefetched and no copy waits).
  int64_t place(int64_t batch, int64_t step) {
    for (size_t i = 0; i < kStages; ++i)
      if (pending_[i] == batch) {
        pending_[i] = -1;
        mark_placed(i, step);
        return -2;
      }
    const size_t i = pick();
    const int64_t reader = reader_[i];
    mark_placed(i, step);
    return reader;
  }

 private:
  static constexpr size_t kStages = 3;
  size_t pick() {
    std::array<StageUse, kStages> use;
    for (size_t i = 0; i < kStages; ++i) use[i] = {pending_[i] >= 0, placed_[i]};
    const size_t i = stage_to_reuse(use);
    pending_[i] = -1;
    return i;
  }
  void mark_placed(size_t i, int64_t step) {
    placed_[i] = placements_++;
    reader_[i] = step;
  }
  std::array<int64_t, kStages> pending_{-1, -1, -1}, placed_{-1, -1, -1}, reader_{-1, -1, -1};
  int64_t placements_ = 0;
};

// The training loop: before step k is queued, batch k+1 is prefetched; queueing step k waits for step
// k-1's results. So when the copy for batch k+1 starts, steps up to k-2 have finished and step k-1 may
// still run: a copy into a stage last read by step k-1 would wait for the device to run dry.
TEST(StageRotation, TheTrainingLoopNeverWaitsForTheStepItJustQueued) {
  StageModel m;
  const int64_t steps = 50;
  for (int64_t k = 0; k < steps; ++k) {
    if (k + 1 < steps) {
      const int64_t reader = m.prefetch(k + 1);
      EXPECT_TRUE(reader == -1 || reader <= k - 2)
          << "step " << k << ": the copy of batch " << k + 1 << " reuses step " << reader << "'s stage";
    }
    const int64_t reader = m.place(k, k);
    if (k == 0) EXPECT_EQ(reader, -1) << "batch 0 is copied into a stage no step has read";
    else EXPECT_EQ(reader, -2) << "step " << k << ": batch " << k << " was prefetched";
  }
}

// Evaluation and bench loops place batches without prefetching: each copy reuses the stage read two
// steps before (the host is at most one step ahead), never the last one.
TEST(StageRotation, PlacingWithoutPrefetchReusesTheOldestStage) {
  StageModel m;
  for (int64_t k = 0; k < 20; ++k) {
    const int64_t reader = m.place(k, k);
    EXPECT_EQ(reader, k >= 3 ? k - 3 : -1) << "step " << k;
  }
}

TEST(StageRotation, NeverPlacedStagesComeFirstThenTheOldest) {
  std::vector<StageUse> use{{false, 4}, {false, -1}, {false, 2}};
  EXPECT_EQ(stage_to_reuse(use), 1u);
  use[1].placed = 5;
  EXPECT_EQ(stage_to_reuse(use), 2u);
  use[2].pending = true;  // a prefetched batch is never overwritten while another stage is free
  EXPECT_EQ(stage_to_reuse(use), 0u);
  use[0].pending = use[1].pending = true;  // all pending: the oldest gives up its prefetch
  EXPECT_EQ(stage_to_reuse(use), 2u);
}

}  // namespace
}  // namespace fastnn::runner
