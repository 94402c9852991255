// check_world_consistency against a fake world whose other ranks report chosen values.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/comm/world_check.h"

namespace fastnn {
namespace {

// Rank `me` of a world where rank r reports peers[r] = {batches, shards}; the caller's own values are
// taken from the call, as a real allgather would.
class FakeWorld final : public Communicator {
 public:
  FakeWorld(int me, std::vector<std::array<int64_t, 2>> peers) : me_(me), peers_(std::move(peers)) {}
  int rank() const override { return me_; }
  int world_size() const override { return static_cast<int>(peers_.size()); }
  int local_rank() const override { return me_; }
  int local_size() const override { return world_size(); }
  std::string name() const override { return "fake"; }
  void barrier() override {}
  int gathers = 0;

 protected:
  void allreduce_sum_impl(void*, size_t, CommDType) override {}
  void broadcast_impl(void*, size_t, CommDType, int) override {}
  void allgather_impl(const void* send, size_t count, void* recv, CommDType type) override {
    ++gathers;
    ASSERT_EQ(type, CommDType::kInt64);
    ASSERT_EQ(count, 2u);
    auto* out = static_cast<int64_t*>(recv);
    for (int r = 0; r < world_size(); ++r) {
      if (r == me_) std::memcpy(out + 2 * r, send, 16);
      else { out[2 * r] = peers_[r][0]; out[2 * r + 1] = peers_[r][1]; }
    }
  }

 private:
  int me_;
  std::vector<std::array<int64_t, 2>> peers_;
};

std::string error_of(FakeWorld& w, int64_t batches, int64_t shards) {
  try {
    check_world_consistency(w, batches, shards);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CommWorldCheck, AcceptsConsistentWorlds) {
  FakeWorld two(1, {{{100, 8}}, {{100, 8}}});
  EXPECT_EQ(error_of(two, 100, 8), "");
  EXPECT_EQ(two.gathers, 1);
  LocalCommunicator one;
  EXPECT_NO_THROW(check_world_consistency(one, 5, 3));  // any shard count divides over 1 rank
}

TEST(CommWorldCheck, RefusesDifferentEpochLengthsListingEveryRank) {
  FakeWorld w(0, {{{0, 0}}, {{99, 8}}, {{100, 8}}, {{100, 8}}});
  const std::string msg = error_of(w, 100, 8);
  EXPECT_NE(msg.find("epoch lengths differ"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0: 100 batches"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1: 99 batches"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 3: 100 batches"), std::string::npos) << msg;
}

TEST(CommWorldCheck, RefusesShardCountNotDividingWorld) {
  FakeWorld w(2, {{{10, 6}}, {{10, 6}}, {{0, 0}}, {{10, 6}}});
  const std::string msg = error_of(w, 10, 6);
  EXPECT_NE(msg.find("6 train shards do not divide over 4 ranks"), std::string::npos) << msg;
  FakeWorld zero(0, {{{0, 0}}, {{10, 0}}});
  EXPECT_NE(error_of(zero, 10, 0).find("do not divide"), std::string::npos);
}

TEST(CommWorldCheck, RefusesDifferentShardCountsAndEmptyEpochs) {
  FakeWorld w(0, {{{0, 0}}, {{10, 4}}});
  EXPECT_NE(error_of(w, 10, 8).find("different train shard counts"), std::string::npos);
  FakeWorld e(0, {{{0, 0}}, {{0, 4}}});
  EXPECT_NE(error_of(e, 0, 4).find("smaller than one batch"), std::string::npos);
}

}  // namespace
}  // namespace fastnn
