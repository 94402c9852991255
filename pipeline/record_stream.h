// The record half of the pipeline: a chain of pull-based stages, run by one thread (the driver),
// that yields records as stored (serialized tf.train.Example bytes) in a deterministic order.
//
//   files ─▶ InterleaveReader ─▶ [RecordShardFilter] ─▶ [CacheStage] ─▶ [ClassBalanceStage] ─▶ [ShuffleStage]
//         ─▶ driver
//
// Records move by std::string swaps: a stage fills the caller's string, reusing its capacity, and
// strings circulate between the shuffle buffer and the batches, so a steady state allocates nothing.
// The decoding work happens later, in parallel, in map_and_batch; this half only moves bytes and
// checks CRCs.
//
// Threading: a stage chain is used by one thread at a time. ReadCounters are atomics so another
// thread may read them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tfrecord.h"
#include "pipeline/batch.h"
#include "pipeline/shard_plan.h"

namespace fastnn::pipeline {

struct ReadCounters {
  std::atomic<uint64_t> files_opened{0};
  std::atomic<uint64_t> records_read{0};     // records taken from shard files
  std::atomic<uint64_t> bytes_read{0};       // bytes consumed from shard files (compressed, if so)
  std::atomic<uint64_t> cache_records{0};    // records served from a cache
  std::atomic<uint64_t> corrupt_skipped{0};  // records (or file tails) skipped as corrupt
};

class RecordStream {
 public:
  virtual ~RecordStream() = default;
  // Rewinds to the start of an epoch; epochs are numbered from 0 and started in order.
  virtual void start_epoch(int64_t epoch) = 0;
  // Fills *out (reusing its capacity) and *src with the next record; false at the end of the epoch.
  virtual bool next(std::string* out, SampleSource* src) = 0;
};

struct ReaderConfig {
  int cycle_length = 1;
  int block_length = 1;
  bool verify_data_crc = true;
  // A corrupt record (bad CRC, truncated frame) is skipped and counted instead of thrown; as the
  // framing after it cannot be trusted, the rest of that file is skipped with it.
  bool skip_corrupt = false;
};

// tf.data's interleave over the plan's files: up to cycle_length files open; block_length records
// from each in turn; an exhausted file's place goes to the next unopened file when that place comes
// round. cycle_length 1 reads the files one after another.
std::unique_ptr<RecordStream> make_interleave_reader(const FileList& list, std::vector<uint32_t> files,
                                                     const ReaderConfig& config, ReadCounters* counters);

// Keeps the records at positions p with p % world == rank and p < limit (by-record sharding).
std::unique_ptr<RecordStream> make_record_shard_filter(std::unique_ptr<RecordStream> upstream, int rank,
                                                       int world, uint64_t limit);

// cache(): the first epoch passes through and keeps every record as stored; later epochs are served
// from the cache without touching upstream. In memory when path is empty; otherwise a TFRecord file
// written under a temporary name during the first epoch and renamed to `path` when the epoch is
// complete. An existing `path` (from an earlier run) is used from the first epoch on, after checking
// that its header record matches `fingerprint` (the files and the shard plan). Records from a cache
// file carry SampleSource{kCacheFile, index in the cache, offset in the cache}.
std::unique_ptr<RecordStream> make_cache_stage(std::unique_ptr<RecordStream> upstream, std::string path,
                                               std::string fingerprint, ReadCounters* counters);

// balance_classes(): each epoch every class present sends the same number of records (±1) and the
// epoch keeps its length, so batches_per_epoch() and the ranks' equal step counts stand. class_counts[c]
// is how many records of class c an upstream epoch holds (the manifest's shard histograms); each
// record's label is read from `label_key`. With n records of a class and a target of t, its j-th
// record (in stream order) goes out floor((j'+1) t/n) - floor(j' t/n) times, j' = (j + phase) mod n:
// records of small classes repeated, of large ones passed over, evenly, exactly t in all. The phase of
// each class and which classes get the remainder's extra records are drawn per epoch from the seed,
// so another subset is repeated or left out each epoch, and a resumed run repeats the uninterrupted
// one. A label outside the counts, or an epoch whose classes do not match them, is a FormatError
// naming the record or the split. Repeats come out back to back: a shuffle stage after it mixes them.
std::unique_ptr<RecordStream> make_class_balance_stage(std::unique_ptr<RecordStream> upstream,
                                                       std::vector<uint64_t> class_counts, std::string label_key,
                                                       uint64_t seed, std::shared_ptr<const FileList> list);

// shuffle(): tf.data's buffer algorithm. Fill a buffer of buffer_size records, then repeatedly emit
// a uniformly chosen one and put the next upstream record in its place. Each epoch drains the buffer
// completely (epoch boundaries are kept). The choices come from Philox keyed by seed and the epoch
// (or epoch 0 for every epoch when reshuffle_each_iteration is false).
std::unique_ptr<RecordStream> make_shuffle_stage(std::unique_ptr<RecordStream> upstream, size_t buffer_size,
                                                 uint64_t seed, bool reshuffle_each_iteration);

}  // namespace fastnn::pipeline
