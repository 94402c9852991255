// A dataset that reads like tf.data, built natively on oneTBB.
//
//   auto ds = Dataset::from_manifest("/data/fm", "train")
//                 .shard(rank, world)
//                 .interleave(/*cycle_length=*/4, /*block_length=*/1)
//                 .cache()                                   // in memory; cache("/tmp/c") for a file
//                 .shuffle(10000, /*seed=*/42)
//                 .repeat(90)
//                 .map_and_batch(make_preprocessor(cfg), 256, /*num_parallel_batches=*/2, true)
//                 .prefetch(32)
//                 .with_options({.deterministic = true, .num_threads = 16});
//   auto it = ds.make_iterator();
//   for (BatchHandle b; it->next(&b);) train_step(b->data(), b->labels(), b->size());
//
// Stages run in tf.data's order (FastNN's pipeline): shard → interleave → cache → [balance_classes] →
// shuffle → repeat → map_and_batch → prefetch; calling them out of that order throws ConfigError, so a
// builder never means something other than it reads. Each stage is optional. Semantics that differ
// from a literal tf.data chain, on purpose:
//   - batches never straddle an epoch (as batch().repeat() in tf.data): every epoch is exactly
//     batches_per_epoch() steps, the same on every rank, known before the first step;
//   - shuffle keeps epoch boundaries (each epoch is a permutation of the rank's records).
//
// Threads: one driver thread runs the record stages; map_and_batch runs on a private
// oneTBB task_arena of num_threads workers; the caller's thread only consumes. With deterministic
// (default) the batches come out in the same order with the same contents for any thread count;
// without, a batch that finishes early may overtake (contents per sample are still reproducible).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/example.h"
#include "pipeline/batch_iterator.h"
#include "pipeline/mixup.h"
#include "pipeline/record_stream.h"
#include "pipeline/sample_mapper.h"
#include "pipeline/shard_plan.h"

namespace fastnn::pipeline {

struct DatasetOptions {
  bool deterministic = true;
  int num_threads = 0;          // num_preprocessing_threads; 0 = hardware concurrency
  uint64_t seed = 0;            // augmentation seed (per-sample RNG key); shuffle has its own
  bool verify_data_crc = true;  // record CRCs (length CRCs are always verified)
  // Corrupt records (CRC, framing: rest of that file; undecodable image or Example: that sample)
  // are skipped, counted and logged instead of ending the epoch with an error.
  bool skip_corrupt = false;
  int max_held_batches = 2;     // batches the consumer may hold at once (double buffering)
  std::shared_ptr<BatchAllocator> allocator;  // default: HostBatchAllocator
  bool guard = false;           // warn on a repeated batch or a constant label stream
  // Labels must be in [0, num_classes): one outside is a FormatError naming the shard file, record
  // index and byte offset (or skipped with skip_corrupt). 0: the manifest's class count when the
  // dataset comes from a manifest, unchecked otherwise. A trainer passes its model's class count.
  int64_t num_classes = 0;
  // Mixup / CutMix of training batches (pipeline/mixup.h; timm's batch, pair or elem mode): for training
  // batches only; Batch::mix_weights() tells the trainer how to mix each sample's labels.
  MixOptions mix;
  // Mixes each of this many equal parts of a batch on its own, with its own draws (gradient accumulation's
  // micro-batches, as timm mixes each loader batch). Part p of the batch at index b of its epoch draws
  // as batch b x mix_parts + p would; 1: the whole batch (batch b draws as b).
  int mix_parts = 1;
};

// One record out of make_record_iterator().
struct RecordItem {
  std::string_view bytes;  // valid until the next call
  SampleSource source;
  int64_t epoch = 0;
  uint64_t index = 0;  // position in the epoch
};

class RecordIterator {
 public:
  virtual ~RecordIterator() = default;
  virtual bool next(RecordItem* item) = 0;
  virtual const ReadCounters& counters() const = 0;
};

class Dataset {
 public:
  static Dataset from_manifest(const std::string& dir, const std::string& split);
  // Files in the given order; counts (one per file) skip counting them when sharding needs it.
  static Dataset from_files(std::vector<std::string> paths, std::vector<int64_t> record_counts = {});
  static Dataset from_file_list(FileList list);

  Dataset& shard(int rank, int world);
  Dataset& interleave(int cycle_length, int block_length = 1);
  Dataset& cache(std::string path = {});
  // Class-balanced sampling (record_stream.h, make_class_balance_stage) over this rank's records; the
  // class counts come from the manifest's shard histograms, so it needs a dataset from a manifest,
  // sharded by file (ConfigError otherwise, saying why).
  Dataset& balance_classes(uint64_t seed, std::string label_key = keys::kLabel);
  Dataset& shuffle(size_t buffer_size, uint64_t seed, bool reshuffle_each_iteration = true);
  Dataset& repeat(int64_t epochs = -1);  // -1: forever
  Dataset& map_and_batch(std::shared_ptr<SampleMapper> fn, int batch_size, int num_parallel_batches = 2,
                         bool drop_remainder = true);
  Dataset& prefetch(int buffer_batches);
  Dataset& with_options(const DatasetOptions& options);

  // The plan, known before the first step (counts the files once if they came without counts).
  const ShardPlan& plan() const;
  const FileList& files() const;
  uint64_t records_per_epoch() const { return plan().records_per_rank; }
  int64_t batches_per_epoch() const;  // requires map_and_batch
  // batches_per_epoch() × epochs, overflow-checked (Error naming the dataset when it does not fit):
  // the step count a trainer may rely on. Record counts come from the manifest; the reader checks
  // them against what each shard really holds (a mismatch is a FormatError naming the shard).
  int64_t total_batches(int64_t epochs) const;
  int64_t epochs() const { return epochs_; }
  // balance_classes(): the records per class this rank holds; empty without that stage.
  const std::vector<uint64_t>& balanced_class_counts() const { return balance_counts_; }

  // The record stages only (shard → interleave → cache → balance_classes → shuffle → repeat), for tests
  // and tools.
  std::unique_ptr<RecordIterator> make_record_iterator() const;
  // The whole pipeline; starts its threads. Requires map_and_batch.
  // first_batch: start at this batch of the whole run (epoch first_batch / batches_per_epoch(), batch
  // first_batch % batches_per_epoch() in it), giving exactly the batches an iterator from 0 would give
  // from there on. Resuming uses it: the epochs before are not read at all (each epoch's order depends
  // only on the seed and its number), the batches before it in its epoch are read but not decoded (the
  // shuffle buffer needs their records).
  std::unique_ptr<BatchIterator> make_iterator(uint64_t first_batch = 0) const;

  // Builds the record stage chain (used by both iterators).
  std::unique_ptr<RecordStream> build_stream(ReadCounters* counters) const;
  const DatasetOptions& options() const { return options_; }

 private:
  void order(int stage, const char* name);
  void ensure_plan() const;
  // check_pipeline_resources (pipeline/resources.h) on this dataset's settings.
  void check_resources() const;

  std::shared_ptr<FileList> list_;
  mutable std::shared_ptr<const ShardPlan> plan_;
  int last_stage_ = 0;
  int rank_ = 0, world_ = 1;
  ReaderConfig reader_;
  bool cache_ = false;
  std::string cache_path_;
  std::vector<uint64_t> balance_counts_;  // per class over this rank's records; empty: no balancing
  uint64_t balance_seed_ = 0;
  std::string balance_label_key_;
  size_t shuffle_buffer_ = 0;
  uint64_t shuffle_seed_ = 0;
  bool reshuffle_ = true;
  int64_t epochs_ = 1;
  std::shared_ptr<SampleMapper> mapper_;
  int batch_size_ = 0;
  int num_parallel_batches_ = 2;
  bool drop_remainder_ = true;
  int prefetch_ = 2;
  DatasetOptions options_;
};

}  // namespace fastnn::pipeline
