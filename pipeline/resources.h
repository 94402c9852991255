// Bounds on the pipeline's resource settings (num_preprocessing_threads, num_parallel_batches,
// prefetch_buffer_size, shuffle_buffer_size), derived from the machine's cores and memory.
//
// Dataset::make_iterator() applies it to its own settings; a trainer can call it first with its
// config values to refuse a bad config before building anything. Memory: the batches the pipeline
// holds at once ((num_parallel_batches + prefetch + held) × batch_bytes) and the shuffle buffer
// (shuffle_buffer × record_bytes, when the record size is known) must each fit in half the
// physical memory. Counts are also capped absolutely (kMaxPipelineBatches, kMaxShuffleBuffer) so
// that a value like 2e9 fails even where sizes are unknown. Throws ConfigError giving the numbers.
#pragma once

#include <cstdint>

#include "core/resources.h"

namespace fastnn::pipeline {

inline constexpr int64_t kMaxPipelineBatches = 1 << 16;       // num_parallel_batches, prefetch
inline constexpr uint64_t kMaxShuffleBuffer = uint64_t{1} << 31;

struct PipelineResources {
  int64_t threads = 0;               // 0: all cores
  int64_t num_parallel_batches = 2;
  int64_t prefetch = 2;
  int64_t held_batches = 2;          // DatasetOptions::max_held_batches
  uint64_t shuffle_buffer = 0;       // records; 0: no shuffle
  uint64_t batch_bytes = 0;          // one batch's sample bytes; 0: unknown
  uint64_t record_bytes = 0;         // average serialized record; 0: unknown
};

void check_pipeline_resources(const PipelineResources& r, const MachineResources& m = MachineResources::detect());

}  // namespace fastnn::pipeline
