// Data-parallel pieces that run in one process: per-rank seeds, the resume position across world
// sizes, the world-of-one DataParallel (no-ops), and the record order the train pipeline relies on:
// shard(rank, world) + interleave over the rank's files makes rank r's q-th record the global record
// q x world + r, for every world size that divides the shard count. The 2-rank behaviour is tested
// end to end under mpirun (tests/integration/mpi_train_*.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/tfrecord.h"
#include "pipeline/dataset.h"
#include "trainer/loop/data_parallel.h"

namespace fastnn::loop {
namespace {

TEST(DataParallel, RankZeroKeepsTheSeedOthersGetTheirOwn) {
  EXPECT_EQ(rank_seed(42, 0), 42u);
  std::set<uint64_t> seen{rank_seed(42, 0)};
  for (int r = 1; r < 64; ++r) EXPECT_TRUE(seen.insert(rank_seed(42, r)).second) << r;
  EXPECT_NE(rank_seed(42, 1), rank_seed(43, 1));
}

TEST(DataParallel, ResumePositionIsTheGlobalStep) {
  CheckpointMeta m;
  m.set_step(30);
  m.set_epoch(3);               // 8 steps of 16 per epoch... written by 2 ranks x 8
  m.set_samples_in_epoch(96);   // 6 steps into epoch 3 at 16 examples
  m.set_world_size(2);
  m.mutable_config()->set_batch_size(8);
  EXPECT_EQ(resume_replay_batches(m, 1, 16, 8), 30);  // same global batch: the same step
  EXPECT_EQ(resume_replay_batches(m, 4, 4, 8), 30);
  // Global batch 32 (4 steps per epoch): epoch 3 from its start, plus 96 / 32 = 3 batches.
  EXPECT_EQ(resume_replay_batches(m, 2, 16, 4), 3 * 4 + 3);
  // Global batch 64 (2 steps per epoch): 96 / 64 = 1 whole batch of the epoch already seen.
  EXPECT_EQ(resume_replay_batches(m, 1, 64, 2), 3 * 2 + 1);
  CheckpointMeta old;  // no config recorded: the step
  old.set_step(7);
  EXPECT_EQ(resume_replay_batches(old, 3, 5, 100), 7);
}

TEST(DataParallel, WorldOfOneChangesNothing) {
  JobConfig c;
  c.set_comm_backend("local");
  DataParallel dp(c);
  EXPECT_EQ(dp.world(), 1);
  EXPECT_TRUE(dp.chief());
  dp.check_world(0, 3);  // nothing to agree on in a world of one
  StepResult r;
  r.loss = 1.2345678901;
  r.correct = 3;
  r.examples = 7;
  double wait = 0.25;
  dp.average_metrics(r, wait);  // nothing to average with
  EXPECT_EQ(r.loss, 1.2345678901);  // not rounded through float
  EXPECT_EQ(r.correct, 3);
  EXPECT_EQ(wait, 0.25);
  dp.fail(std::runtime_error("x"));  // returns: the caller's exception reports the error
}

TEST(DataParallel, UnknownBackendIsAConfigError) {
  JobConfig c;
  c.set_comm_backend("carrier-pigeon");
  EXPECT_THROW(DataParallel dp(c), ConfigError);
}

// 4 equal shards of 6 records; record text "f<file>r<index>".
std::vector<std::string> write_rank_shards(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (int f = 0; f < 4; ++f) {
    paths.push_back((dir / ("train-" + std::to_string(f) + ".tfrecord")).string());
    TFRecordWriter w(paths.back());
    for (int i = 0; i < 6; ++i) w.write("f" + std::to_string(f) + "r" + std::to_string(i));
    w.close();
  }
  return paths;
}

std::vector<std::string> records(const std::vector<std::string>& paths, int rank, int world) {
  auto ds = pipeline::Dataset::from_files(paths, std::vector<int64_t>(paths.size(), 6));
  ds.shard(rank, world);
  // As make_train_dataset: every file of the rank in turn, one record each.
  ds.interleave(static_cast<int>(ds.plan().files.size()), 1);
  std::vector<std::string> out;
  auto it = ds.make_record_iterator();
  for (pipeline::RecordItem item; it->next(&item);) out.emplace_back(item.bytes);
  return out;
}

TEST(DataParallel, GlobalRecordOrderDoesNotDependOnTheWorldSize) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fastnn_dp_order";
  const std::vector<std::string> paths = write_rank_shards(dir);
  const std::vector<std::string> global = records(paths, 0, 1);
  ASSERT_EQ(global.size(), 24u);
  EXPECT_EQ(global[0], "f0r0");
  EXPECT_EQ(global[1], "f1r0");  // one record from each shard in turn
  EXPECT_EQ(global[5], "f1r1");
  for (int world : {2, 4}) {
    for (int r = 0; r < world; ++r) {
      const std::vector<std::string> mine = records(paths, r, world);
      ASSERT_EQ(mine.size(), 24u / static_cast<size_t>(world));
      for (size_t q = 0; q < mine.size(); ++q)
        EXPECT_EQ(mine[q], global[q * static_cast<size_t>(world) + static_cast<size_t>(r)])
            << "world " << world << " rank " << r << " record " << q;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fastnn::loop
