// Which input stage the CUDA runner's next batch copy goes into (input_stages_cuda.h), as plain host
// logic so that CI checks it without a GPU (runner_stage_rotation_test).
//
// A stage is reused only after the step that read it has finished (the copy waits on that step's
// event). The training loop places batch k for step k while batch k+1 is already prefetched, and the
// host runs one step ahead of the device (StepRunner::queue_train), so with three stages the right one
// to reuse is the one whose batch was placed longest ago: its step (k-2) has finished by then, and the
// copy does not wait. The turn-by-turn rotation this replaces got there too, but not from the start:
// the loop prefetches batch 1 before it places batch 0, so at step 2 the copy reused step 1's stage and
// the host waited for the device to run dry once. This choice holds whatever the order of the calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fastnn::runner {

struct StageUse {
  bool pending = false;  // holds a prefetched batch still to be placed
  int64_t placed = -1;   // the order of its last place() (0, 1, 2, ...); -1: never placed
};

// The stage to copy into: a stage without a pending batch, never placed first, else placed longest ago.
// When every stage is pending, the one placed longest ago (its prefetch is given up: that batch is
// copied again when it comes).
inline size_t stage_to_reuse(std::span<const StageUse> stages) {
  size_t best = stages.size();
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].pending) continue;
    if (best == stages.size() || stages[i].placed < stages[best].placed) best = i;
  }
  if (best != stages.size()) return best;
  best = 0;
  for (size_t i = 1; i < stages.size(); ++i)
    if (stages[i].placed < stages[best].placed) best = i;
  return best;
}

}  // namespace fastnn::runner
