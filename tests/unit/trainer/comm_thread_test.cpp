// The in-process world (thread_communicator.h): every collective against values computed by hand, on
// 1, 2 and 3 ranks, with results bitwise the same on every rank.
#include "trainer/comm/thread_communicator.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/check.h"

#include <thread>
#include <vector>

namespace fastnn {
namespace {

void run_world(int n, const std::function<void(Communicator&)>& body) {
  auto world = make_thread_world(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { body(*world[static_cast<size_t>(r)]); });
  for (auto& t : threads) t.join();
}

class ThreadWorld : public ::testing::TestWithParam<int> {};

TEST_P(ThreadWorld, CollectivesGiveTheHandComputedValues) {
  const int w = GetParam();
  std::vector<std::vector<double>> sums(static_cast<size_t>(w));
  run_world(w, [&](Communicator& c) {
    const int r = c.rank();
    EXPECT_EQ(c.world_size(), w);
    std::vector<double> s = {0.1 * (r + 1), 1.0};
    c.allreduce_sum(std::span<double>(s));
    sums[static_cast<size_t>(r)] = s;  // compared across ranks below
    EXPECT_DOUBLE_EQ(s[1], w);
    std::vector<float> m = {static_cast<float>(r), -static_cast<float>(r)};
    c.allreduce_max(std::span<float>(m));
    EXPECT_EQ(m[0], w - 1);
    EXPECT_EQ(m[1], 0);
    std::vector<int64_t> avg = {6 * static_cast<int64_t>(w)};
    c.allreduce_average(std::span<int64_t>(avg));
    EXPECT_EQ(avg[0], 6 * w);
    // Three buffers, one empty, averaged in one message: each gets its own average back.
    std::vector<float> first = {2.0f * r, 1.0f}, none, second = {4.0f * r};
    c.allreduce_average_packed({std::span<float>(first), std::span<float>(none), std::span<float>(second)});
    EXPECT_FLOAT_EQ(first[0], static_cast<float>(w - 1));
    EXPECT_FLOAT_EQ(first[1], 1.0f);
    EXPECT_FLOAT_EQ(second[0], 2.0f * static_cast<float>(w - 1));
    std::vector<float> b = {static_cast<float>(r) + 0.5f};
    c.broadcast(std::span<float>(b), w - 1);
    EXPECT_EQ(b[0], w - 0.5f);
    const double mine[2] = {static_cast<double>(r), 10.0 + r};
    std::vector<double> all(2 * static_cast<size_t>(w));
    c.allgather(std::span<const double>(mine, 2), std::span<double>(all));
    for (int q = 0; q < w; ++q) {
      EXPECT_EQ(all[2 * q], q);
      EXPECT_EQ(all[2 * q + 1], 10 + q);
    }
    // Rank q's block b holds q + 100 b: rank r gets sum_q (q + 100 r).
    std::vector<float> send(2 * static_cast<size_t>(w)), recv(2);
    for (int blk = 0; blk < w; ++blk) send[2 * blk] = send[2 * blk + 1] = static_cast<float>(r + 100 * blk);
    c.reduce_scatter_sum(std::span<const float>(send), std::span<float>(recv));
    const float expect = static_cast<float>(w * (w - 1) / 2 + 100 * r * w);
    EXPECT_EQ(recv[0], expect);
    EXPECT_EQ(recv[1], expect);
    c.barrier();
  });
  // The sum is rank0 + rank1 + ... left to right, the same bits on every rank.
  double expect = 0;
  for (int q = 0; q < w; ++q) expect += 0.1 * (q + 1);
  for (const auto& s : sums) EXPECT_EQ(s[0], expect);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ThreadWorld, ::testing::Values(1, 2, 3));

TEST(ThreadWorld, SizeChecksNameTheMismatch) {
  run_world(2, [&](Communicator& c) {
    std::vector<float> send(3), recv(2);
    EXPECT_THROW(c.reduce_scatter_sum(std::span<const float>(send), std::span<float>(recv)), Error);
  });
  EXPECT_THROW(make_thread_world(0), Error);
}

TEST(LocalCommunicator, ModelParallelCollectivesAreIdentities) {
  LocalCommunicator c;
  std::vector<double> m = {-3, 4};
  c.allreduce_max(std::span<double>(m));
  EXPECT_EQ(m, (std::vector<double>{-3, 4}));
  std::vector<double> send = {1, 2}, recv(2);
  c.reduce_scatter_sum(std::span<const double>(send), std::span<double>(recv));
  EXPECT_EQ(recv, send);
}

}  // namespace
}  // namespace fastnn
