// Writes planned shards in parallel with oneTBB; the bytes depend only on the plan, never on the
// thread count or the scheduling.
//
// Shards run as the tasks of a parallel_for; inside a shard a parallel_pipeline cuts the shard's
// sample list into chunks (serial, in order), encodes the samples of a chunk (parallel, one encoder
// per thread) and appends the records to the shard's file (serial, in order). The pipeline is
// isolated per shard, so a thread works on one shard at a time, and the chunk size shrinks with the
// thread count so that the source bytes in flight stay near kInFlightBytes whatever the machine:
// peak memory is the index plus bounded buffers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "converters/source.h"
#include "core/tfrecord.h"

namespace fastnn {
class Progress;
}

namespace fastnn::converters {

inline constexpr uint64_t kInFlightBytes = uint64_t{128} << 20;

// Jobs start in the order given (the writer hands them out one by one).
struct ShardJob {
  const SplitIndex* split = nullptr;
  const std::vector<uint32_t>* samples = nullptr;  // indices into split->samples, in write order
  std::string path;                                // file to write (a temporary name)
  std::string name;                                // final name, for messages
};

// What the records of a shard (or of everything) look like; "" / 0 where they differ.
struct ImageSummary {
  bool any = false;
  std::string format;
  int height = 0, width = 0, channels = 0;
  void add(const RecordInfo& info);
  void merge(const ImageSummary& other);
};

struct ShardOutcome {
  uint64_t records = 0;
  uint64_t file_bytes = 0;  // size on disk after close
  ImageSummary image;
};

// start_writeback: hand each finished shard to the kernel's writeback at once (the commit's fsync
// then has little left to wait for). Must run inside the caller's task arena. Throws the first error (naming the sample's source and the
// shard); files already written are left for the caller's OutputDir to remove.
std::vector<ShardOutcome> write_shards(const Source& source, const DatasetIndex& index,
                                       std::span<const ShardJob> jobs, Compression compression,
                                       bool start_writeback, Progress* progress);

}  // namespace fastnn::converters
