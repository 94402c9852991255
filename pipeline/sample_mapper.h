// The `fn` of map_and_batch: turns one record into one sample, written straight into its slot of
// the batch buffer.
//
// Contract: map() is called concurrently from the pipeline's worker threads, each passing its own
// worker index (0 .. num_workers-1 as given to prepare()), so per-worker scratch needs no locks.
// It must write exactly spec().sample_bytes() bytes at `slot` and must not allocate in the steady
// state (keep scratch per worker). Everything random must come from SampleRng keyed by ctx.seed,
// ctx.epoch and ctx.index, so that a sample does not depend on which thread ran it. Errors in the
// record throw FormatError; the pipeline adds the file, record index and offset.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "pipeline/batch.h"

namespace fastnn::pipeline {

// Nanoseconds a worker spent per stage, accumulated by mappers (for `fastnn bench pipeline`).
struct StageTimes {
  uint64_t parse_ns = 0;
  uint64_t decode_ns = 0;
  uint64_t augment_ns = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;  // encoded image bytes seen
};

struct SampleContext {
  uint64_t seed = 0;
  int64_t epoch = 0;
  uint64_t index = 0;  // position of the sample in its epoch's (shuffled) stream
  SampleSource source;
  int worker = 0;
  StageTimes* times = nullptr;  // never null when called by the pipeline
};

class SampleMapper {
 public:
  virtual ~SampleMapper() = default;
  virtual BatchSpec spec() const = 0;
  // Called once before any map(), with the number of distinct worker indices.
  virtual void prepare(int num_workers) = 0;
  virtual void map(std::string_view record, const SampleContext& ctx, void* slot, int32_t* label) = 0;
};

// A mapper from a plain function (tests, custom decoders). fn must be safe to call concurrently.
using SampleFn = std::function<void(std::string_view record, const SampleContext& ctx, void* slot, int32_t* label)>;
std::shared_ptr<SampleMapper> make_function_mapper(BatchSpec spec, SampleFn fn);

}  // namespace fastnn::pipeline
