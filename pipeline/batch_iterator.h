// The batch side of the pipeline: fused map_and_batch on a private oneTBB arena, a bounded pool of
// batch buffers, prefetch, and ordered delivery.
//
// Memory: the pool holds at most prefetch + num_parallel_batches + max_held_batches batch buffers,
// allocated on first use and recycled after (a BatchHandle gives its buffer back when it is reset or
// destroyed), so after the first few batches the pipeline allocates no batch memory at all.
//
// Device seam: a CUDA prefetcher consumes BatchHandles, copies batch->data() (from pinned memory,
// given by its BatchAllocator) on its own stream and resets the handle when the copy has completed;
// holding max_held_batches handles at once gives double buffering.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/sample_mapper.h"

namespace fastnn::pipeline {

class Batch {
 public:
  const BatchSpec& spec() const { return spec_; }
  int size() const { return size_; }          // samples in this batch
  int capacity() const { return capacity_; }  // batch_size
  void* data() { return data_; }
  const void* data() const { return data_; }
  // Sample i's bytes start at data() + i * spec().sample_bytes().
  void* sample(int i) { return static_cast<char*>(data_) + static_cast<size_t>(i) * spec_.sample_bytes(); }
  const void* sample(int i) const {
    return static_cast<const char*>(data_) + static_cast<size_t>(i) * spec_.sample_bytes();
  }
  size_t bytes() const { return static_cast<size_t>(size_) * spec_.sample_bytes(); }
  const int32_t* labels() const { return labels_.data(); }
  const SampleSource* sources() const { return sources_.data(); }
  int64_t epoch() const { return epoch_; }
  int64_t step() const { return step_; }          // index of the batch in its epoch
  uint64_t sequence() const { return sequence_; }  // index of the batch in the run (from first_batch on)
  uint64_t first_index() const { return first_index_; }  // epoch position of sample 0
  // Mixup / CutMix (DatasetOptions::mix, pipeline/mixup.h): each sample's weight of its own label, size()
  // of them; its partner's label has 1 minus it. Sample i's partner is size()-1-i, or with
  // DatasetOptions::mix_parts P > 1 its mirror within its part (each of the P equal parts is mixed on its
  // own). Empty when mixing is off (every weight 1).
  const std::vector<double>& mix_weights() const { return mix_weights_; }
  double mix_weight(int i) const { return mix_weights_.empty() ? 1.0 : mix_weights_.at(static_cast<size_t>(i)); }

 private:
  friend class BatchIterator;
  friend struct BatchPool;
  BatchSpec spec_;
  void* data_ = nullptr;
  int size_ = 0;
  int capacity_ = 0;
  std::vector<int32_t> labels_;
  std::vector<SampleSource> sources_;
  int64_t epoch_ = 0;
  int64_t step_ = 0;
  uint64_t sequence_ = 0;
  uint64_t first_index_ = 0;
  std::vector<double> mix_weights_;
};

struct BatchPool;

// Owns one batch until reset or destroyed; then the buffer goes back to the pool. May outlive the
// iterator. Move-only.
class BatchHandle {
 public:
  BatchHandle() = default;
  ~BatchHandle() { reset(); }
  BatchHandle(BatchHandle&& o) noexcept : pool_(std::move(o.pool_)), batch_(o.batch_) { o.batch_ = nullptr; }
  BatchHandle& operator=(BatchHandle&& o) noexcept;
  BatchHandle(const BatchHandle&) = delete;
  BatchHandle& operator=(const BatchHandle&) = delete;

  explicit operator bool() const { return batch_ != nullptr; }
  Batch* operator->() const { return batch_; }
  Batch& operator*() const { return *batch_; }
  void reset();

 private:
  friend class BatchIterator;
  std::shared_ptr<BatchPool> pool_;
  Batch* batch_ = nullptr;
};

struct PipelineStats {
  uint64_t batches = 0;
  uint64_t samples = 0;
  uint64_t skipped_samples = 0;   // undecodable samples dropped (skip_corrupt)
  uint64_t files_opened = 0;
  uint64_t records_read = 0;      // from shard files
  uint64_t bytes_read = 0;        // from shard files
  uint64_t cache_records = 0;
  uint64_t corrupt_records = 0;   // corrupt frames skipped (skip_corrupt)
  StageTimes workers;             // summed over workers
  uint64_t read_ns = 0;           // driver: pulling records through the record stages
  uint64_t driver_wait_ns = 0;    // driver: waiting for a free buffer or an in-flight slot
  uint64_t consumer_wait_ns = 0;  // caller: waiting in next()
  uint64_t buffers_allocated = 0; // batch buffers ever allocated (bounded by the pool)
  int pool_capacity = 0;
  uint64_t guard_warnings = 0;
};

class BatchIterator {
 public:
  struct Config;  // pipeline/batch_iterator_config.h; built by Dataset::make_iterator
  explicit BatchIterator(Config config);
  ~BatchIterator();
  BatchIterator(const BatchIterator&) = delete;
  BatchIterator& operator=(const BatchIterator&) = delete;

  // Blocks for the next batch; false at the end of the last epoch. Rethrows the pipeline's error
  // (naming file, record and offset) in stream order. *out's previous batch is released first.
  bool next(BatchHandle* out);

  PipelineStats stats() const;
  const BatchSpec& spec() const;
  int batch_size() const;
  int64_t batches_per_epoch() const;
  int num_threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::pipeline
