#include "trainer/comm/bucketed_allreduce.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace fastnn {

std::vector<GradBuffer> grad_buffers(std::span<const ParamRef> params) {
  std::vector<GradBuffer> out;
  out.reserve(params.size());
  for (const ParamRef& p : params) out.push_back(GradBuffer{p.name, p.grad, p.count});
  return out;
}

std::vector<Bucket> plan_buckets(std::span<const size_t> counts, size_t bucket_bytes) {
  FASTNN_CHECK(bucket_bytes >= sizeof(float), "bucket size of ", bucket_bytes, " bytes holds no float");
  const size_t cap = bucket_bytes / sizeof(float);
  std::vector<Bucket> buckets;
  Bucket current;
  for (size_t b = 0; b < counts.size(); ++b) {
    size_t offset = 0;
    while (offset < counts[b]) {
      const size_t n = std::min(counts[b] - offset, cap - current.count);
      current.slices.push_back(BucketSlice{b, offset, current.count, n});
      current.count += n;
      offset += n;
      if (current.count == cap) {
        buckets.push_back(std::move(current));
        current = Bucket{};
      }
    }
  }
  if (current.count > 0) buckets.push_back(std::move(current));
  return buckets;
}

BucketedAllreduce::BucketedAllreduce(Communicator& comm, std::vector<GradBuffer> buffers, size_t bucket_bytes)
    : comm_(comm), buffers_(std::move(buffers)) {
  std::vector<size_t> counts;
  counts.reserve(buffers_.size());
  for (const GradBuffer& g : buffers_) {
    FASTNN_CHECK(g.count == 0 || g.data != nullptr, "gradient buffer '", g.name, "' is null");
    counts.push_back(g.count);
  }
  buckets_ = plan_buckets(counts, bucket_bytes);
  size_t largest = 0;
  for (const Bucket& b : buckets_) largest = std::max(largest, b.count);
  staging_.resize(largest);
}

void BucketedAllreduce::average() {
  if (comm_.world_size() == 1) return;
  for (const Bucket& bucket : buckets_) {
    // A bucket that is one whole buffer is reduced in place: no copies.
    if (bucket.slices.size() == 1 && bucket.slices[0].count == buffers_[bucket.slices[0].buffer].count) {
      const GradBuffer& g = buffers_[bucket.slices[0].buffer];
      comm_.allreduce_average(std::span<float>(g.data, g.count));
      continue;
    }
    float* stage = staging_.data();
    for (const BucketSlice& s : bucket.slices)
      std::memcpy(stage + s.bucket_offset, buffers_[s.buffer].data + s.buffer_offset, s.count * sizeof(float));
    comm_.allreduce_average(std::span<float>(stage, bucket.count));
    for (const BucketSlice& s : bucket.slices)
      std::memcpy(buffers_[s.buffer].data + s.buffer_offset, stage + s.bucket_offset, s.count * sizeof(float));
  }
}

size_t bucket_bytes_from_mib(double mib) {
  FASTNN_CHECK(mib > 0, "allreduce_bucket_mb must be > 0, got ", mib);
  return static_cast<size_t>(std::max(4.0, mib * 1024.0 * 1024.0));
}

}  // namespace fastnn
