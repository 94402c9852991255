// Row-partitioned arrays in checkpoints (trainer/checkpoint/row_shards.h): the ranks of a world are
// played one after the other in this process (write_row_shard per rank, then the chief's save), and the
// checkpoint is read back at every other world size, bitwise. Retention, crash leftovers, damage
// (missing, corrupted, resized shard), set-aside, replacement at another world size, and the
// Communicator form with a world of one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/check.h"
#include "core/crc32c.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/checkpoint_summary.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/checkpoint/sharded_save.h"
#include "trainer/comm/communicator.h"

namespace fastnn::checkpoint {
namespace {

using testing_util::ScratchDir;
namespace fs = std::filesystem;

// A classifier head of `rows` classes: weights [rows, 3], one Adam slot [rows, 3] and a bias-like
// [rows, 2, 2] array, every float distinct (and some with awkward bit patterns) so any misplaced row shows.
struct Head {
  explicit Head(int64_t rows, float seed = 0.f) : rows(rows) {
    for (const auto& [name, cols] : kArrays) {
      std::vector<float> a(static_cast<size_t>(rows * cols));
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = seed + std::ldexp(static_cast<float>(i) + 0.1f * static_cast<float>(name.size()), -3) -
               (i % 7 == 3 ? 1e-30f : 0.f);
      data.push_back(std::move(a));
    }
  }
  // Rank `rank`'s slices at `world` ranks.
  std::vector<RowShardSlice> slices(int rank, int world) const {
    const RowRange rr = row_range(rows, rank, world);
    std::vector<RowShardSlice> out;
    for (size_t k = 0; k < kArrays.size(); ++k) {
      const int64_t cols = kArrays[k].second;
      std::vector<int64_t> shape = {rows, cols};
      if (k == 2) shape = {rows, 2, 2};
      out.push_back({kArrays[k].first, shape, rr.begin, rr.end, data[k].data() + rr.begin * cols,
                     static_cast<size_t>(rr.size() * cols), /*optimizer=*/k == 1});
    }
    return out;
  }
  static inline const std::vector<std::pair<std::string, int64_t>> kArrays = {
      {"head/weights", 3}, {"head/weights/adam_m", 3}, {"head/table", 4}};
  int64_t rows;
  std::vector<std::vector<float>> data;
};


// Every rank writes its shard, then the chief commits; returns the prefix.
std::string save_at(const std::string& dir, int64_t step, int world, const Head& head, int keep_max = 5) {
  std::vector<RowShardFile> records;
  for (int r = 0; r < world; ++r) records.push_back(write_row_shard(dir, step, r, world, head.slices(r, world), false));
  const std::vector<float> backbone = {1.f, 2.f, static_cast<float>(step)};
  const std::vector<ArrayView> weights = {f32_view("backbone/w", {3}, backbone.data(), 3)};
  CheckpointManager m(dir, testing_util::quick_manager_options(keep_max));
  CheckpointMeta meta;
  meta.set_world_size(world);
  return m.save(step, weights, {}, meta, records).prefix;
}

bool same_floats(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

using testing_util::files_in;

size_t count_with(const std::string& dir, const std::string& part) {
  size_t n = 0;
  for (const auto& f : files_in(dir)) n += f.find(part) != std::string::npos;
  return n;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RowShards, RowRangeSplitsEvenlyFirstRanksGetTheRemainder) {
  for (int64_t rows : {0, 1, 2, 7, 10, 1000003})
    for (int world : {1, 2, 3, 4, 7}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const RowRange rr = row_range(rows, r, world);
        EXPECT_EQ(rr.begin, next);
        EXPECT_EQ(rr.size(), rows / world + (r < rows % world ? 1 : 0)) << rows << " rows, rank " << r << " of " << world;
        next = rr.end;
      }
      EXPECT_EQ(next, rows);
    }
  EXPECT_THROW(row_range(10, 2, 2), Error);
}

TEST(RowShards, NamesParse) {
  EXPECT_EQ(shard_file_name(40, 1, 3), "ckpt-40.shard-1-of-3.safetensors");
  std::string suffix;
  EXPECT_EQ(parse_checkpoint_name("ckpt-40.shard-1-of-3.safetensors", &suffix), 40);
  EXPECT_EQ(suffix, ".shard-1-of-3.safetensors");
  EXPECT_EQ(parse_shard_suffix(suffix), (std::pair{1, 3}));
  for (const char* bad : {"ckpt-4.shard-3-of-3.safetensors", "ckpt-4.shard-01-of-3.safetensors",
                          "ckpt-4.shard-0-of-0.safetensors", "ckpt-4.shard-0-of-3", "ckpt-4.shard--1-of-3.safetensors",
                          "ckpt-4.shard-0-of-99999999.safetensors", "ckpt-4.shard-0-of-3.safetensors.x"})
    EXPECT_FALSE(parse_checkpoint_name(bad)) << bad;
}

// The heart of it: saved at W, read back at every W' (each rank's rows and the whole array), bitwise.
TEST(RowShards, SavedAtAnyWorldReadsBackAtAnyOtherBitwise) {
  for (int64_t rows : {10, 2}) {  // 2 rows at 3 ranks: the last rank holds none
    const Head head(rows);
    for (int saved : {1, 2, 3}) {
      ScratchDir dir("rowshard-any");
      const std::string prefix = save_at(dir.path(), 7, saved, head);
      EXPECT_EQ(count_with(dir.path(), ".shard-"), static_cast<size_t>(saved));
      const LoadedCheckpoint ck = load_checkpoint(dir.path());  // the directory: its latest, verified
      ASSERT_EQ(ck.meta.shard_files_size(), saved);
      RowShardReader reader(ck);
      ASSERT_EQ(reader.arrays().size(), 3u);
      for (int world : {1, 2, 3, 4}) {
        for (size_t k = 0; k < Head::kArrays.size(); ++k) {
          const std::string& name = Head::kArrays[k].first;
          const int64_t cols = Head::kArrays[k].second;
          for (int r = 0; r < world; ++r) {
            const RowRange rr = row_range(rows, r, world);
            const std::vector<float> got = reader.read_rows(name, rr.begin, rr.end);
            ASSERT_EQ(got.size(), static_cast<size_t>(rr.size() * cols));
            EXPECT_TRUE(same_floats(got.data(), head.data[k].data() + rr.begin * cols, got.size()))
                << name << " saved at " << saved << ", rank " << r << " of " << world;
          }
        }
      }
      for (size_t k = 0; k < Head::kArrays.size(); ++k) {
        const std::vector<float> all = reader.read_all(Head::kArrays[k].first);
        ASSERT_EQ(all.size(), head.data[k].size());
        EXPECT_TRUE(same_floats(all.data(), head.data[k].data(), all.size()));
      }
      const RowShardedArrayLayout& m = reader.at("head/weights/adam_m");
      EXPECT_TRUE(m.optimizer);
      EXPECT_FALSE(reader.at("head/weights").optimizer);
      EXPECT_EQ(reader.at("head/table").global_shape, (std::vector<int64_t>{rows, 2, 2}));
      EXPECT_EQ(m.parts.size(), static_cast<size_t>(saved));
      // One process's view (eval): the partitioned weights whole, optimizer slots only when asked for.
      const std::vector<Array> whole = read_row_sharded_arrays(ck);
      ASSERT_EQ(whole.size(), 2u);
      EXPECT_EQ(whole[0].name, "head/table");
      EXPECT_EQ(whole[1].name, "head/weights");
      EXPECT_EQ(whole[1].shape, (std::vector<int64_t>{rows, 3}));
      EXPECT_EQ(std::memcmp(whole[1].bytes.data(), head.data[0].data(), whole[1].bytes.size()), 0);
      EXPECT_EQ(read_row_sharded_arrays(ck, true).size(), 3u);
    }
  }
}

TEST(RowShards, MetaRecordsEveryShardFile) {
  ScratchDir dir("rowshard-meta");
  const Head head(10);
  const std::string prefix = save_at(dir.path(), 3, 3, head);
  const CheckpointMeta meta = read_checkpoint_meta(meta_path(prefix));
  ASSERT_EQ(meta.shard_files_size(), 3);
  const int64_t begins[] = {0, 4, 7}, ends[] = {4, 7, 10};
  for (int r = 0; r < 3; ++r) {
    const RowShardFile& f = meta.shard_files(r);
    EXPECT_EQ(f.name(), str("ckpt-3.shard-", r, "-of-3.safetensors"));
    EXPECT_EQ(f.rank(), r);
    EXPECT_EQ(f.world_size(), 3);
    const std::string bytes = testing_util::read_bytes(dir.file(f.name()));
    EXPECT_EQ(f.size_bytes(), bytes.size());
    EXPECT_EQ(f.crc32c(), crc32c(bytes));
    ASSERT_EQ(f.arrays_size(), 3);
    for (const auto& a : f.arrays()) {
      EXPECT_EQ(a.row_begin(), begins[r]);
      EXPECT_EQ(a.row_end(), ends[r]);
      EXPECT_EQ(a.global_shape(0), 10);
    }
    // The shard is plain safetensors: the local rows under the array's name.
    const SafetensorsFile sf = SafetensorsFile::open(dir.file(f.name()));
    EXPECT_EQ(sf.at("head/weights").shape, (std::vector<int64_t>{ends[r] - begins[r], 3}));
    EXPECT_EQ(sf.metadata().at("fastnn_shard"), str(r, " of 3"));
  }
}

TEST(RowShards, ReadOpensOnlyTheFilesItNeeds) {
  ScratchDir dir("rowshard-lazy");
  const Head head(10);
  const std::string prefix = save_at(dir.path(), 1, 3, head);  // rows 0..4, 4..7, 7..10
  RowShardReader reader(prefix, read_checkpoint_meta(meta_path(prefix)));
  reader.read_rows("head/weights", 0, 5);  // rank 0 of 2
  EXPECT_EQ(reader.files_opened(), (std::vector<std::string>{"ckpt-1.shard-0-of-3.safetensors",
                                                              "ckpt-1.shard-1-of-3.safetensors"}));
  EXPECT_THROW(reader.read_rows("head/weights", 5, 11), Error);
  EXPECT_THROW(reader.read_rows("nope", 0, 1), Error);
  std::vector<float> small(2);
  EXPECT_THROW(reader.read_rows("head/weights", 0, 1, small.data(), small.size()), Error);
  RowShardReadOptions tiny;
  tiny.max_read_bytes = 16;
  RowShardReader limited(prefix, read_checkpoint_meta(meta_path(prefix)), tiny);
  EXPECT_NE(message_of([&] { limited.read_all("head/weights"); }).find("limit"), std::string::npos);
}

TEST(RowShards, RetentionDeletesShardFiles) {
  ScratchDir dir("rowshard-keep");
  const Head head(10);
  save_at(dir.path(), 1, 2, head, 2);
  save_at(dir.path(), 2, 3, head, 2);
  save_at(dir.path(), 3, 2, head, 2);
  EXPECT_EQ(count_with(dir.path(), "ckpt-1."), 0u);
  EXPECT_EQ(count_with(dir.path(), "ckpt-2.shard-"), 3u);
  EXPECT_EQ(count_with(dir.path(), "ckpt-3.shard-"), 2u);
  save_at(dir.path(), 4, 1, head, 2);
  EXPECT_EQ(count_with(dir.path(), "ckpt-2."), 0u);
  EXPECT_EQ(count_with(dir.path(), ".shard-"), 3u);
}

TEST(RowShards, CrashBeforeTheMetaLeavesNothingCommittedAndTheNextSaveCleansUp) {
  ScratchDir dir("rowshard-crash");
  const Head head(10);
  save_at(dir.path(), 1, 2, head);
  // Ranks wrote their shards for step 2; the chief died before committing.
  for (int r = 0; r < 3; ++r) write_row_shard(dir.path(), 2, r, 3, head.slices(r, 3), false);
  EXPECT_EQ(count_with(dir.path(), ".ckpt-2.shard-"), 3u);
  // The chief dies after renaming the data files of step 3, before the meta.
  {
    std::vector<RowShardFile> records;
    for (int r = 0; r < 2; ++r) records.push_back(write_row_shard(dir.path(), 3, r, 2, head.slices(r, 2), false));
    CheckpointManager::Options o = testing_util::quick_manager_options();
    o.fault_hook = [](const std::string& stage) {
      if (stage == "renamed_data") throw IoError("simulated crash");
    };
    CheckpointManager m(dir.path(), o);
    EXPECT_THROW(m.save(3, {}, {}, CheckpointMeta(), records), IoError);
  }
  EXPECT_EQ(count_with(dir.path(), "ckpt-3.shard-"), 2u);  // final names, but no meta: not committed
  EXPECT_FALSE(fs::exists(dir.file("ckpt-3.meta.pbtxt")));
  {
    CheckpointManager m(dir.path(), testing_util::quick_manager_options());
    ASSERT_EQ(m.list().size(), 1u);
    EXPECT_EQ(m.latest()->step, 1);
  }
  EXPECT_EQ(load_checkpoint(dir.path()).meta.step(), 1);
  save_at(dir.path(), 4, 2, head);
  const std::set<std::string> left = files_in(dir.path());
  for (const auto& f : left) {
    EXPECT_EQ(f.find("ckpt-2."), std::string::npos) << f;
    EXPECT_EQ(f.find("ckpt-3."), std::string::npos) << f;
    EXPECT_EQ(f.find("fastnn-tmp"), std::string::npos) << f;
  }
  EXPECT_EQ(count_with(dir.path(), "ckpt-4.shard-"), 2u);
  EXPECT_EQ(count_with(dir.path(), "ckpt-1.shard-"), 2u);
}

TEST(RowShards, FailedCommitRemovesTheShardTemporaries) {
  ScratchDir dir("rowshard-fail");
  const Head head(10);
  std::vector<RowShardFile> records;
  for (int r = 0; r < 2; ++r) records.push_back(write_row_shard(dir.path(), 5, r, 2, head.slices(r, 2), false));
  CheckpointManager::Options o = testing_util::quick_manager_options();
  o.fault_hook = [](const std::string& stage) {
    if (stage == "meta_temp") throw IoError("simulated failure");
  };
  CheckpointManager m(dir.path(), o);
  EXPECT_THROW(m.save(5, {}, {}, CheckpointMeta(), records), IoError);
  EXPECT_EQ(count_with(dir.path(), "ckpt-5"), 0u) << "temporaries left behind";
}

TEST(RowShards, CommitRefusesMissingOrInconsistentShards) {
  ScratchDir dir("rowshard-refuse");
  const Head head(10);
  std::vector<RowShardFile> records;
  for (int r = 0; r < 3; ++r) records.push_back(write_row_shard(dir.path(), 5, r, 3, head.slices(r, 3), false));
  CheckpointManager m(dir.path(), testing_util::quick_manager_options());
  // A rank's record is missing: the rows do not tile, nothing is written.
  std::vector<RowShardFile> two(records.begin(), records.begin() + 2);
  EXPECT_NE(message_of([&] { m.save(5, {}, {}, CheckpointMeta(), two); }).find("shard"), std::string::npos);
  // A rank's file never arrived in this directory.
  fs::remove(shard_temp_path(dir.path(), records[2].name()));
  const std::string msg = message_of([&] { m.save(5, {}, {}, CheckpointMeta(), records); });
  EXPECT_NE(msg.find("ckpt-5.shard-2-of-3.safetensors"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir.file("ckpt-5.meta.pbtxt")));
  // A record saying it belongs to another step.
  EXPECT_THROW(m.save(6, {}, {}, CheckpointMeta(), records), FormatError);
}

// A shard that is missing, corrupted or resized after the commit makes the checkpoint damaged, named.
TEST(RowShards, DamagedShardIsNamedNeverSkipped) {
  const Head head(10);
  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"missing", [](const std::string& p) { fs::remove(p); }, "missing"},
      {"corrupted",
       [](const std::string& p) {
         std::string b = testing_util::read_bytes(p);
         b[b.size() - 5] ^= 0x10;
         testing_util::write_bytes(p, b);
       },
       "CRC32C"},
      {"resized", [](const std::string& p) { testing_util::write_bytes(p, testing_util::read_bytes(p) + "x"); }, "bytes"},
  };
  for (const Case& c : cases) {
    ScratchDir dir("rowshard-damage");
    save_at(dir.path(), 1, 2, head);
    const std::string prefix = save_at(dir.path(), 2, 3, head);
    const std::string shard = dir.file("ckpt-2.shard-1-of-3.safetensors");
    c.damage(shard);
    const std::string why = checkpoint_damage(prefix);
    EXPECT_NE(why.find("ckpt-2.shard-1-of-3.safetensors"), std::string::npos) << c.what << ": " << why;
    EXPECT_NE(why.find(c.expect), std::string::npos) << c.what << ": " << why;
    const std::string latest = message_of([&] { load_checkpoint(dir.path()); });
    EXPECT_NE(latest.find("ckpt-2 is damaged"), std::string::npos) << latest;
    EXPECT_NE(latest.find("last good checkpoint is " + dir.file("ckpt-1")), std::string::npos) << latest;
    if (std::string(c.what) == "corrupted") {
      // Without the whole-file check at load, the reader still verifies the file it opens.
      const LoadedCheckpoint ck = load_checkpoint(prefix, {.verify_shards = false});
      RowShardReader reader(ck);
      EXPECT_NO_THROW(reader.read_rows("head/weights", 0, 4));  // rank 0's file is intact
      const std::string r = message_of([&] { reader.read_rows("head/weights", 4, 5); });
      EXPECT_NE(r.find("ckpt-2.shard-1-of-3.safetensors: CRC32C"), std::string::npos) << r;
    } else {
      EXPECT_EQ(CheckpointManager(dir.path(), testing_util::quick_manager_options()).latest()->step, 1) << "an incomplete checkpoint is not listed";
    }
  }
}

TEST(RowShards, MetaThatDoesNotTileOrNamesOtherFilesIsRefused) {
  ScratchDir dir("rowshard-badmeta");
  const Head head(10);
  const std::string prefix = save_at(dir.path(), 2, 2, head);
  const CheckpointMeta good = read_checkpoint_meta(meta_path(prefix));
  auto expect_refused = [&](const std::function<void(CheckpointMeta&)>& edit, const char* needle) {
    CheckpointMeta m = good;
    edit(m);
    testing_util::write_bytes(meta_path(prefix), checkpoint_meta_to_text(m));
    const std::string why = checkpoint_damage(prefix);
    EXPECT_NE(why.find(needle), std::string::npos) << why;
    EXPECT_NE(why.find("ckpt-2.meta.pbtxt"), std::string::npos) << why;
  };
  expect_refused([](CheckpointMeta& m) { m.mutable_shard_files(1)->mutable_arrays(0)->set_row_begin(6); }, "continue");
  expect_refused([](CheckpointMeta& m) { m.mutable_shard_files(1)->set_name("../../etc/passwd"); }, "name should be");
  expect_refused([](CheckpointMeta& m) { m.mutable_shard_files(0)->mutable_arrays(0)->set_global_shape(0, 11); },
                 "global shape");
  expect_refused([](CheckpointMeta& m) { m.mutable_shard_files()->RemoveLast(); }, "rank 0 of 2, expected rank 0 of 1");
  expect_refused(
      [](CheckpointMeta& m) {
        for (int i = 0; i < 2; ++i) m.mutable_shard_files(i)->mutable_arrays(0)->set_global_shape(0, int64_t{1} << 59);
      },
      "limit");
  expect_refused([](CheckpointMeta& m) { m.mutable_shard_files(1)->mutable_arrays(0)->set_name("head/other"); },
                 "not in shard_files[0]");
}

TEST(RowShards, SetAsideRenamesTheShardsToo) {
  ScratchDir dir("rowshard-aside");
  const Head head(10);
  const std::string prefix = save_at(dir.path(), 2, 3, head);
  fs::remove(dir.file("ckpt-2.shard-2-of-3.safetensors"));
  const std::vector<std::string> moved = set_aside_checkpoint(prefix);
  EXPECT_EQ(moved.size(), 5u);  // meta, weights, optimizer, two shards
  EXPECT_EQ(count_with(dir.path(), ".shard-"), 2u);
  EXPECT_EQ(count_with(dir.path(), ".safetensors.damaged"), 4u);
  for (const auto& f : files_in(dir.path()))
    EXPECT_TRUE(f.ends_with(".damaged") || f == "checkpoint" || f == ".checkpoint.lock") << f;
  // The step can be saved again (another world size) without touching what was set aside.
  save_at(dir.path(), 2, 2, head);
  EXPECT_EQ(load_checkpoint(dir.path()).meta.shard_files_size(), 2);
  EXPECT_EQ(count_with(dir.path(), ".damaged"), 5u);
}

TEST(RowShards, ReplacingAStepAtAnotherWorldSizeRemovesTheOldShards) {
  ScratchDir dir("rowshard-replace");
  const Head head(10), other(10, 100.f);
  save_at(dir.path(), 4, 3, head);
  const std::string prefix = save_at(dir.path(), 4, 2, other);
  EXPECT_EQ(count_with(dir.path(), "-of-3."), 0u);
  EXPECT_EQ(count_with(dir.path(), "-of-2."), 2u);
  RowShardReader reader(load_checkpoint(prefix));
  const std::vector<float> w = reader.read_all("head/weights");
  EXPECT_TRUE(same_floats(w.data(), other.data[0].data(), w.size()));
  // Any of the checkpoint's files names it, shard files included.
  EXPECT_EQ(load_checkpoint(dir.file("ckpt-4.shard-1-of-2.safetensors")).prefix, prefix);
}

TEST(RowShards, CommunicatorSaveWithAWorldOfOne) {
  ScratchDir dir("rowshard-comm");
  const Head head(5);
  LocalCommunicator comm;
  CheckpointManager m(dir.path(), testing_util::quick_manager_options());
  CheckpointMeta meta;
  meta.set_epoch(3);
  const auto slices = head.slices(0, 1);
  const CheckpointInfo info = save_sharded_checkpoint(comm, &m, dir.path(), 9, slices, {}, {}, meta, false);
  const LoadedCheckpoint ck = load_checkpoint(info.prefix);
  EXPECT_EQ(ck.meta.world_size(), 1);
  EXPECT_EQ(ck.meta.epoch(), 3);
  RowShardReader reader(ck);
  const std::vector<float> t = reader.read_all("head/table");
  EXPECT_TRUE(same_floats(t.data(), head.data[2].data(), t.size()));
  // A rank that cannot write its shard: nobody commits, the error names the rank.
  std::vector<RowShardSlice> bad = slices;
  bad[0].count -= 1;
  const std::string msg = message_of([&] { save_sharded_checkpoint(comm, &m, dir.path(), 10, bad, {}, {}, meta, false); });
  EXPECT_NE(msg.find("rank(s) 0 could not write"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir.file("ckpt-10.meta.pbtxt")));
  EXPECT_EQ(count_with(dir.path(), "ckpt-10"), 0u);
  EXPECT_THROW(save_sharded_checkpoint(comm, nullptr, dir.path(), 11, slices, {}, {}, meta, false), Error);
}

TEST(RowShards, SummaryListsShardedArrays) {
  ScratchDir dir("rowshard-summary");
  const Head head(10);
  const std::string prefix = save_at(dir.path(), 6, 3, head);
  const std::string text = checkpoint_summary_text(load_checkpoint(prefix));
  EXPECT_NE(text.find("step 6"), std::string::npos) << text;
  EXPECT_NE(text.find("head/weights"), std::string::npos) << text;
  EXPECT_NE(text.find("[10, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("ckpt-6.shard-1-of-3.safetensors rows 4..7"), std::string::npos) << text;
  EXPECT_NE(text.find("backbone/w"), std::string::npos) << text;
  const nlohmann::json j = checkpoint_summary_json(load_checkpoint(prefix));
  EXPECT_EQ(j["step"], 6);
  EXPECT_EQ(j["sharded_arrays"].size(), 3u);
  EXPECT_EQ(j["sharded_arrays"][0]["name"], "head/table");
  EXPECT_EQ(j["sharded_arrays"][0]["global_shape"], nlohmann::json({10, 2, 2}));
  EXPECT_EQ(j["sharded_arrays"][0]["parts"][2]["rows"], nlohmann::json({7, 10}));
  EXPECT_EQ(j["shard_files"].size(), 3u);
}

}  // namespace
}  // namespace fastnn::checkpoint
