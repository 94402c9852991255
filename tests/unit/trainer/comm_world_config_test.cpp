// One configuration per job (trainer/comm/world_check.h): ranks run as threads over an in-process
// allgather; differing job configs and models are refused on every rank alike, naming the fields (or
// the first differing variable) and the ranks; rank-local fields may differ.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "schemas/job_config.pb.h"
#include "trainer/comm/world_check.h"

namespace fastnn {
namespace {

// The shared side of a world of threads: allgather of int64 words (what the checks use).
struct CountingWorld {
  explicit CountingWorld(int n) : size(n), sync(n), slots(static_cast<size_t>(n)) {}
  int size;
  std::barrier<> sync;
  std::vector<std::vector<char>> slots;
  std::atomic<int> gathers{0};
};

class ThreadRank final : public Communicator {
 public:
  ThreadRank(CountingWorld& w, int me) : w_(w), me_(me) {}
  int rank() const override { return me_; }
  int world_size() const override { return w_.size; }
  int local_rank() const override { return me_; }
  int local_size() const override { return w_.size; }
  std::string name() const override { return "threads"; }
  void barrier() override { w_.sync.arrive_and_wait(); }

 protected:
  void allreduce_sum_impl(void*, size_t, CommDType) override { FAIL() << "not used"; }
  void broadcast_impl(void*, size_t, CommDType, int) override { FAIL() << "not used"; }
  void allgather_impl(const void* send, size_t count, void* recv, CommDType type) override {
    ASSERT_EQ(type, CommDType::kInt64);
    const auto* p = static_cast<const char*>(send);
    w_.slots[static_cast<size_t>(me_)].assign(p, p + 8 * count);
    if (me_ == 0) ++w_.gathers;
    w_.sync.arrive_and_wait();
    for (int r = 0; r < w_.size; ++r) std::memcpy(static_cast<char*>(recv) + 8 * count * r, w_.slots[r].data(), 8 * count);
    w_.sync.arrive_and_wait();
  }

 private:
  CountingWorld& w_;
  int me_;
};

// Runs body(rank, comm) on each rank's thread; returns each rank's ConfigError message ("" if none).
std::vector<std::string> run_world(int n, const std::function<void(int, Communicator&)>& body, int* gathers = nullptr) {
  CountingWorld w(n);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ThreadRank comm(w, r);
      try {
        body(r, comm);
      } catch (const ConfigError& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  if (gathers) *gathers = w.gathers;
  return errors;
}

JobConfig base() {
  JobConfig c;
  c.set_model_name("lenet");
  c.set_learning_rate(0.01);
  return c;
}

TEST(WorldConfig, SameConfigsPassWithOneSmallGather) {
  int gathers = 0;
  const auto errors = run_world(3, [](int r, Communicator& comm) {
    JobConfig c = base();
    c.set_output_dir("/mnt/rank" + std::to_string(r));  // rank-local: paths and pipeline knobs
    c.set_num_preprocessing_threads(2 + r);
    check_job_config_consistency(comm, c);
  }, &gathers);
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(gathers, 1);  // the hash only
}

TEST(WorldConfig, DifferingFieldsAreNamedOnEveryRank) {
  const auto errors = run_world(2, [](int r, Communicator& comm) {
    JobConfig c = base();
    if (r == 1) {
      c.set_learning_rate(0.02);
      c.set_seed(7);
    }
    check_job_config_consistency(comm, c);
  });
  ASSERT_NE(errors[0], "");
  EXPECT_EQ(errors[0], errors[1]);  // agreed
  EXPECT_NE(errors[0].find("learning_rate (rank 0: 0.01, rank 1: 0.02)"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("seed (rank 0: "), std::string::npos) << errors[0];
  EXPECT_EQ(errors[0].find("model_name"), std::string::npos) << errors[0];
}

TEST(WorldConfig, DifferentModelsNameTheFirstDifferingVariable) {
  const auto errors = run_world(2, [](int r, Communicator& comm) {
    std::vector<std::string> vars = {"conv1/weights [32,1,5,5]", "conv1/biases [32]",
                                     r == 0 ? "fc/weights [10,512]" : "fc/weights [12,512]"};
    check_model_consistency(comm, vars);
  });
  ASSERT_NE(errors[0], "");
  EXPECT_EQ(errors[0], errors[1]);
  EXPECT_NE(errors[0].find("first difference at #2: rank 0 fc/weights [10,512], rank 1 fc/weights [12,512]"),
            std::string::npos)
      << errors[0];
  const auto same = run_world(2, [](int, Communicator& comm) { check_model_consistency(comm, {"a [1]"}); });
  EXPECT_EQ(same[0] + same[1], "");
}

}  // namespace
}  // namespace fastnn
