// The pool of batch buffers behind BatchIterator (internal to pipeline/): at most `capacity`
// entries, each a Batch with its buffer (from the BatchAllocator, allocated on first use) and its
// per-sample scratch, recycled through a free list. Thread-safe: the driver acquires, BatchHandles
// and the iterator release.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/batch_iterator.h"

namespace fastnn::pipeline {

struct PoolEntry : Batch {
  std::vector<std::string> records;         // record bytes, capacity reused batch after batch
  std::vector<uint8_t> skipped;             // per sample: 0 ok, 1 skipped, 2 failed
  std::vector<std::exception_ptr> errors;   // per sample, set only when it failed
  std::exception_ptr error;
};

struct BatchPool {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<PoolEntry>> entries;
  std::vector<PoolEntry*> free_list;
  std::shared_ptr<BatchAllocator> allocator;
  BatchSpec spec;
  int batch_size = 0;
  size_t capacity = 0;
  uint64_t allocated = 0;
  int held = 0;  // handles the consumer holds
  bool stopped = false;

  ~BatchPool();
  // Blocks until an entry is free (allocating one while under capacity); nullptr once stopped.
  PoolEntry* acquire();
  void release(PoolEntry* e, bool from_handle);
  void stop();
};

}  // namespace fastnn::pipeline
