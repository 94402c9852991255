// What Dataset::make_iterator hands to a BatchIterator (internal to pipeline/).
#pragma once

#include <memory>

#include "pipeline/batch_iterator.h"
#include "pipeline/dataset.h"
#include "pipeline/record_stream.h"
#include "pipeline/shard_plan.h"

namespace fastnn::pipeline {

struct BatchIterator::Config {
  std::shared_ptr<const FileList> files;  // for error messages; outlives the stream
  std::unique_ptr<ReadCounters> counters;
  std::unique_ptr<RecordStream> stream;
  std::shared_ptr<SampleMapper> mapper;
  int batch_size = 0;
  int num_parallel_batches = 2;
  bool drop_remainder = true;
  int prefetch = 2;
  int64_t epochs = 1;  // -1: forever
  int64_t batches_per_epoch = 0;
  uint64_t first_batch = 0;  // Dataset::make_iterator(first_batch)
  DatasetOptions options;
};

}  // namespace fastnn::pipeline
