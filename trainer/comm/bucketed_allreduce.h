// Gradient averaging over a Communicator in fixed-size buckets.
//
// Many small allreduces are latency bound and one huge one needs a model-sized staging buffer, so
// gradients are packed, in parameter order, into buckets of at most `bucket_bytes` (default 25 MB, as
// PyTorch DDP), each bucket is allreduce-averaged, and the results are copied back. A buffer larger than
// a bucket is split over consecutive buckets; a bucket may hold the tail of one buffer and the heads of
// the next ones. Every element is reduced exactly once, so the result is elementwise
// sum-over-ranks / world_size whatever the bucket size; only the MPI reduction order may differ with
// message size (see communicator.h), so results for different bucket sizes agree within float
// rounding, and every rank always gets bitwise the same result.
//
// The plan is fixed at construction (the caller's buffers must stay in place); the staging buffer is
// allocated once. With a world of one, average() does nothing (no copies).
// Threading: one thread. Errors: null buffers with a non-zero count, bucket_bytes < 4 -> fastnn::Error.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/params.h"

namespace fastnn {

inline constexpr size_t kDefaultBucketBytes = size_t{25} << 20;

// allreduce_bucket_mb (MiB, > 0, else fastnn::Error) as a bucket size in bytes, at least 4.
size_t bucket_bytes_from_mib(double mib);

struct GradBuffer {
  std::string name;
  float* data = nullptr;
  size_t count = 0;
};

// The gradients (ParamRef::grad) of an optimizer's parameter list, in order.
std::vector<GradBuffer> grad_buffers(std::span<const ParamRef> params);

// One contiguous run of a buffer inside a bucket.
struct BucketSlice {
  size_t buffer = 0;       // index into the buffer list
  size_t buffer_offset = 0;  // first element within that buffer
  size_t bucket_offset = 0;  // where it lands in the bucket
  size_t count = 0;
};

struct Bucket {
  std::vector<BucketSlice> slices;
  size_t count = 0;  // elements in the bucket (sum of slice counts)
};

// Packs buffers of the given element counts, in order, into buckets of at most
// max(1, bucket_bytes / sizeof(float)) floats. Empty buffers get no slice; no bucket is empty.
std::vector<Bucket> plan_buckets(std::span<const size_t> counts, size_t bucket_bytes);

class BucketedAllreduce {
 public:
  BucketedAllreduce(Communicator& comm, std::vector<GradBuffer> buffers, size_t bucket_bytes = kDefaultBucketBytes);

  // Replaces every gradient by its average over ranks (a collective: every rank must call it).
  void average();

  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  Communicator& comm_;
  std::vector<GradBuffer> buffers_;
  std::vector<Bucket> buckets_;
  std::vector<float> staging_;
};

}  // namespace fastnn
