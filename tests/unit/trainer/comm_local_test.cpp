// LocalCommunicator semantics, argument checks, the factory's backend choice, and the collective guard.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "trainer/comm/collective_guard.h"
#include "trainer/comm/communicator.h"

namespace fastnn {
namespace {

TEST(CommLocal, WorldOfOneCollectivesAreIdentity) {
  LocalCommunicator c;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.world_size(), 1);
  EXPECT_EQ(c.local_rank(), 0);
  std::vector<float> f = {1.5f, -2.25f, 3.0f};
  c.allreduce_sum(std::span<float>(f));
  c.allreduce_average(std::span<float>(f));
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.25f, 3.0f}));
  std::vector<double> d = {0.1, 0.2};
  c.allreduce_average(std::span<double>(d));
  EXPECT_EQ(d, (std::vector<double>{0.1, 0.2}));
  std::vector<int64_t> i = {7, -9};
  c.allreduce_average(std::span<int64_t>(i));
  c.broadcast(std::span<int64_t>(i), 0);
  EXPECT_EQ(i, (std::vector<int64_t>{7, -9}));
  std::vector<int64_t> gathered(2, 0);
  c.allgather(std::span<const int64_t>(i), std::span<int64_t>(gathered));
  EXPECT_EQ(gathered, i);
  c.barrier();
}

TEST(CommLocal, RejectsBadRootAndGatherSize) {
  LocalCommunicator c;
  std::vector<float> f(3, 1.0f);
  EXPECT_THROW(c.broadcast(std::span<float>(f), 1), Error);
  EXPECT_THROW(c.broadcast(std::span<float>(f), -1), Error);
  std::vector<float> small(2);
  EXPECT_THROW(c.allgather(std::span<const float>(f), std::span<float>(small)), Error);
}

TEST(CommFactory, PicksBackendFromEnvironmentAndRejectsUnknown) {
  // Remove every launcher variable this test could inherit, then restore them.
  const char* vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* v : vars) {
    if (const char* s = std::getenv(v)) saved.emplace_back(v, s);
    unsetenv(v);
  }
  EXPECT_FALSE(launched_by_mpi());
  EXPECT_EQ(make_communicator()->name(), "local");
  EXPECT_EQ(make_communicator(CommOptions{"local", 1.0})->world_size(), 1);
  EXPECT_THROW(make_communicator(CommOptions{"gloo", 1.0}), ConfigError);
  setenv("PMI_SIZE", "2", 1);
  EXPECT_TRUE(launched_by_mpi());
  unsetenv("PMI_SIZE");
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_TRUE(launched_by_mpi());
  unsetenv("OMPI_COMM_WORLD_SIZE");
  for (auto& [k, v] : saved) setenv(k.c_str(), v.c_str(), 1);
}

TEST(CollectiveGuard, FiresOnceWithOpNameWhenCollectiveStalls) {
  std::vector<std::string> messages;
  std::mutex mu;
  {
    CollectiveGuard guard(0.2, "rank 1/2", [&](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu);
      messages.push_back(m);
    }, /*exit_if_on_timeout_returns=*/false);
    CollectiveGuard::Scope scope(guard, "allreduce_sum", 4096, "float32");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!guard.fired() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(guard.fired());
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // would fire again if not once-only
  }
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("rank 1/2"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("allreduce_sum"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("4096 x float32"), std::string::npos) << messages[0];
}

TEST(CollectiveGuard, QuietWhenCollectivesFinishInTime) {
  bool fired = false;
  CollectiveGuard guard(0.3, "rank 0/2", [&](const std::string&) { fired = true; }, false);
  for (int i = 0; i < 5; ++i) {
    CollectiveGuard::Scope scope(guard, "barrier", 0, "-");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Idle time between collectives never counts.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(guard.fired());
  EXPECT_FALSE(fired);
}

TEST(CollectiveGuard, DisabledWithZeroTimeout) {
  CollectiveGuard guard(0.0, "rank 0/1", [](const std::string&) { FAIL(); }, false);
  EXPECT_FALSE(guard.enabled());
  CollectiveGuard::Scope scope(guard, "barrier", 0, "-");
}

}  // namespace
}  // namespace fastnn
