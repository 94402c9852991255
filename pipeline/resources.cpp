#include "pipeline/resources.h"

#include "core/check.h"

namespace fastnn::pipeline {
namespace {

std::string gib(uint64_t bytes) { return str(static_cast<double>(bytes) / (1u << 30), " GiB"); }

}  // namespace

void check_pipeline_resources(const PipelineResources& r, const MachineResources& m) {
  check_thread_count(r.threads, "num_preprocessing_threads", m);
  auto count = [](int64_t v, int64_t lo, const char* name) {
    if (v < lo || v > kMaxPipelineBatches)
      throw ConfigError(str(name, " ", v, " must be in ", lo, "..", kMaxPipelineBatches));
  };
  count(r.num_parallel_batches, 1, "num_parallel_batches");
  count(r.prefetch, 0, "prefetch_buffer_size");
  count(r.held_batches, 1, "max_held_batches");
  if (r.shuffle_buffer > kMaxShuffleBuffer)
    throw ConfigError(str("shuffle_buffer_size ", r.shuffle_buffer, " is more than ", kMaxShuffleBuffer, " records"));
  if (m.memory_bytes == 0) return;
  const uint64_t budget = m.memory_bytes / 2;
  const uint64_t batches = static_cast<uint64_t>(r.num_parallel_batches + r.prefetch + r.held_batches);
  unsigned __int128 need = static_cast<unsigned __int128>(batches) * r.batch_bytes;
  if (need > budget)
    throw ConfigError(str("num_parallel_batches ", r.num_parallel_batches, " + prefetch_buffer_size ", r.prefetch,
                          " + ", r.held_batches, " held batches of ", r.batch_bytes, " bytes need ",
                          gib(static_cast<uint64_t>(std::min<unsigned __int128>(need, UINT64_MAX))),
                          ", more than half of this machine's ", gib(m.memory_bytes)));
  need = static_cast<unsigned __int128>(r.shuffle_buffer) * r.record_bytes;
  if (need > budget)
    throw ConfigError(str("shuffle_buffer_size ", r.shuffle_buffer, " records of about ", r.record_bytes,
                          " bytes need ", gib(static_cast<uint64_t>(std::min<unsigned __int128>(need, UINT64_MAX))),
                          ", more than half of this machine's ", gib(m.memory_bytes)));
}

}  // namespace fastnn::pipeline
