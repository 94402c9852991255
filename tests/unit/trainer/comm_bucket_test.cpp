// Bucket planning and bucketed averaging against a fake two-rank world.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/comm/bucketed_allreduce.h"

namespace fastnn {
namespace {

// Rank 0 of a simulated world of two whose peer holds, for each element, `peer(value)`; the sum it
// returns is value + peer(value). Records the size of every allreduce.
class PeerSimCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 2; }
  std::string name() const override { return "peer-sim"; }
  void barrier() override {}
  std::vector<size_t> calls;

 protected:
  void allreduce_sum_impl(void* data, size_t count, CommDType type) override {
    calls.push_back(count);
    ASSERT_EQ(type, CommDType::kFloat32);
    float* f = static_cast<float*>(data);
    for (size_t i = 0; i < count; ++i) f[i] = f[i] + (3.0f * f[i] + 1.0f);  // peer holds 3x+1
  }
  void broadcast_impl(void*, size_t, CommDType, int) override {}
  void allgather_impl(const void*, size_t, void*, CommDType) override {}
};

TEST(CommBucket, PlanCoversEveryElementOnceInOrderWithinCapacity) {
  const std::vector<size_t> counts = {10, 0, 3, 25, 1, 7};
  for (size_t bucket_bytes : std::vector<size_t>{4, 8, 40, 44, 100, 4096, 7}) {
    const size_t cap = bucket_bytes / 4;
    const auto buckets = plan_buckets(counts, bucket_bytes);
    std::vector<std::vector<int>> seen(counts.size());
    for (size_t b = 0; b < counts.size(); ++b) seen[b].assign(counts[b], 0);
    size_t prev_buffer = 0, prev_end = 0;
    for (size_t k = 0; k < buckets.size(); ++k) {
      const Bucket& bucket = buckets[k];
      EXPECT_GT(bucket.count, 0u);
      EXPECT_LE(bucket.count, cap);
      if (k + 1 < buckets.size()) {
        EXPECT_EQ(bucket.count, cap) << "only the last bucket may be partial";
      }
      size_t at = 0;
      for (const BucketSlice& s : bucket.slices) {
        EXPECT_EQ(s.bucket_offset, at);
        EXPECT_GT(s.count, 0u);
        at += s.count;
        // Slices follow parameter order: same buffer continues, or a later buffer starts at 0.
        if (s.buffer == prev_buffer) {
          EXPECT_EQ(s.buffer_offset, prev_end);
        } else {
          EXPECT_GT(s.buffer, prev_buffer);
          EXPECT_EQ(s.buffer_offset, 0u);
        }
        prev_buffer = s.buffer;
        prev_end = s.buffer_offset + s.count;
        for (size_t i = 0; i < s.count; ++i) seen[s.buffer][s.buffer_offset + i]++;
      }
      EXPECT_EQ(at, bucket.count);
    }
    for (size_t b = 0; b < counts.size(); ++b)
      for (int c : seen[b]) EXPECT_EQ(c, 1) << "bucket_bytes=" << bucket_bytes << " buffer " << b;
  }
  EXPECT_TRUE(plan_buckets(std::vector<size_t>{0, 0}, 64).empty());
  EXPECT_THROW(plan_buckets(std::vector<size_t>{1}, 3), Error);
}

TEST(CommBucket, AveragingEqualsElementwiseMeanForEveryBucketSize) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  const std::vector<size_t> counts = {33, 1, 0, 200, 17, 64};
  std::vector<std::vector<float>> original(counts.size());
  for (size_t b = 0; b < counts.size(); ++b) {
    original[b].resize(counts[b]);
    for (float& v : original[b]) v = dist(rng);
  }
  for (size_t bucket_bytes : std::vector<size_t>{4, 60, 132, 256, 1000, 4096, size_t{25} << 20}) {
    auto grads = original;
    std::vector<GradBuffer> refs;
    for (size_t b = 0; b < counts.size(); ++b) refs.push_back({"p" + std::to_string(b), grads[b].data(), counts[b]});
    PeerSimCommunicator comm;
    BucketedAllreduce reducer(comm, refs, bucket_bytes);
    reducer.average();
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    EXPECT_EQ(std::accumulate(comm.calls.begin(), comm.calls.end(), size_t{0}), total);
    EXPECT_EQ(comm.calls.size(), reducer.buckets().size());
    for (size_t n : comm.calls) EXPECT_LE(n, std::max<size_t>(bucket_bytes / 4, 1));
    for (size_t b = 0; b < counts.size(); ++b)
      for (size_t i = 0; i < counts[b]; ++i) {
        const float x = original[b][i];
        const float expected = (x + (3.0f * x + 1.0f)) / 2.0f;  // same float ops as the fake + average
        ASSERT_EQ(grads[b][i], expected) << "bucket_bytes=" << bucket_bytes << " buffer " << b << " i " << i;
      }
  }
}

TEST(CommBucket, WorldOfOneLeavesGradientsUntouchedAndParamRefsMap) {
  std::vector<float> w(5, 0.0f), g = {1, 2, 3, 4, 5};
  std::vector<ParamRef> params(1);
  params[0].name = "fc/weights";
  params[0].value = w.data();
  params[0].grad = g.data();
  params[0].count = g.size();
  const auto bufs = grad_buffers(params);
  ASSERT_EQ(bufs.size(), 1u);
  EXPECT_EQ(bufs[0].name, "fc/weights");
  EXPECT_EQ(bufs[0].data, g.data());
  LocalCommunicator local;
  BucketedAllreduce reducer(local, bufs, 8);
  reducer.average();
  EXPECT_EQ(g, (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_THROW(BucketedAllreduce(local, {GradBuffer{"x", nullptr, 3}}), Error);
}

}  // namespace
}  // namespace fastnn
