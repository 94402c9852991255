// Batches: the shape of one sample, where batch memory comes from, and what travels with a batch.
//
// A batch is B samples of one BatchSpec, stored back to back (sample i starts at i * sample_bytes()),
// plus an int32 label and a SampleSource per sample. Batch memory comes from a BatchAllocator and is
// recycled by the iterator's pool, so a pipeline in steady state allocates nothing; the CUDA
// backend plugs in an allocator of pinned host memory here and copies batches on its own stream.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace fastnn::pipeline {

// A batch holds uint8, float32 or float16 samples (core/dtype.h's kU8, kF32, kF16), NHWC or NCHW, under
// the names the pipeline's flags use:
const char* batch_dtype_name(DType d);         // "uint8", "float32", "float16"
const char* batch_layout_name(Layout l);       // "NHWC", "NCHW"
DType parse_batch_dtype(std::string_view s);    // uint8|float|float32|half|float16; ConfigError otherwise
Layout parse_batch_layout(std::string_view s);  // NHWC|nhwc|NCHW|nchw; ConfigError otherwise

// One sample's geometry.
struct BatchSpec {
  int height = 0;
  int width = 0;
  int channels = 0;
  DType dtype = DType::kF32;
  Layout layout = Layout::kNHWC;

  size_t sample_elements() const { return static_cast<size_t>(height) * width * channels; }
  size_t sample_bytes() const { return sample_elements() * dtype_size(dtype); }
  std::string describe() const;  // e.g. "224x224x3 float32 NHWC"
};

// Where a sample came from: the index of its file in the dataset's file list (kCacheFile for a
// record served from a cache file), its record index in that file and the byte offset of its frame
// in the uncompressed record stream.
struct SampleSource {
  static constexpr uint32_t kCacheFile = 0xFFFFFFFFu;
  uint32_t file = 0;
  uint64_t record = 0;
  uint64_t offset = 0;
  bool operator==(const SampleSource&) const = default;
};

// Batch memory — the seam where the CUDA backend hands the pipeline pinned host memory
// (cudaHostAlloc), set through DatasetOptions::allocator. allocate() returns memory aligned to at
// least 64 bytes or throws; deallocate gets back exactly the pointer and size allocate gave.
// allocate is called on the pipeline's driver thread, once per pool buffer on first use (at most
// prefetch + num_parallel_batches + max_held_batches times per iterator, never per batch or sample);
// deallocate when the pool goes, i.e. with the iterator or with the last BatchHandle that outlives
// it, on whichever thread drops that. Implementations need not be fast, only thread-safe; the pool
// keeps its allocator alive (shared_ptr) for as long as any of its buffers exists.
class BatchAllocator {
 public:
  virtual ~BatchAllocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) = 0;
  virtual const char* name() const = 0;
};

// Plain aligned host memory; counts calls so tests and benchmarks can show the pool is bounded.
class HostBatchAllocator : public BatchAllocator {
 public:
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  const char* name() const override { return "host"; }

  uint64_t allocations() const { return allocations_.load(); }
  uint64_t live_bytes() const { return live_bytes_.load(); }

 private:
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> live_bytes_{0};
};

std::shared_ptr<BatchAllocator> default_batch_allocator();

}  // namespace fastnn::pipeline
