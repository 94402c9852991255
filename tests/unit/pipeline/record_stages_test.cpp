// The record stages (interleave, shard, cache, shuffle, repeat) against simple references, on small
// shard files whose records name their own file and index.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "core/check.h"
#include "pipeline/dataset.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

using testing::record_name;
using testing::ScratchDir;
using testing::write_named_shards;

struct Item {
  std::string bytes;
  SampleSource source;
  int64_t epoch;
  uint64_t index;
};

std::vector<Item> drain(const Dataset& ds) {
  std::vector<Item> out;
  auto it = ds.make_record_iterator();
  RecordItem r;
  while (it->next(&r)) out.push_back({std::string(r.bytes), r.source, r.epoch, r.index});
  return out;
}

std::vector<std::string> names(const std::vector<Item>& items) {
  std::vector<std::string> v;
  for (const auto& i : items) v.push_back(i.bytes);
  return v;
}

// tf.data's interleave, written plainly over vectors.
std::vector<std::string> interleave_reference(const std::vector<int>& counts, int cycle, int block) {
  std::vector<std::vector<std::string>> files;
  for (size_t f = 0; f < counts.size(); ++f) {
    files.emplace_back();
    for (int r = 0; r < counts[f]; ++r) files.back().push_back(record_name(int(f), r));
  }
  struct Open {
    int file = -1;
    size_t pos = 0;
  };
  std::vector<Open> slots(cycle);
  size_t next_file = 0;
  std::vector<std::string> out;
  int cur = 0;
  for (;;) {
    bool any = next_file < files.size();
    for (auto& s : slots) any = any || s.file >= 0;
    if (!any) break;
    Open& s = slots[cur];
    if (s.file < 0 && next_file < files.size()) s = {int(next_file++), 0};
    int taken = 0;
    while (s.file >= 0 && taken < block) {
      if (s.pos < files[s.file].size()) {
        out.push_back(files[s.file][s.pos++]);
        ++taken;
      } else {
        s.file = -1;
      }
    }
    if (s.file >= 0 && s.pos == files[s.file].size() && taken < block) s.file = -1;
    cur = (cur + 1) % cycle;
  }
  return out;
}

TEST(Interleave, MatchesTfDataOrder) {
  ScratchDir dir("interleave");
  std::vector<int> counts = {5, 1, 0, 7, 3, 4};
  auto paths = write_named_shards(dir, counts);
  for (int cycle : {1, 2, 3, 8})
    for (int block : {1, 2, 3}) {
      auto got = names(drain(Dataset::from_files(paths).interleave(cycle, block)));
      EXPECT_EQ(got, interleave_reference(counts, cycle, block)) << "cycle " << cycle << " block " << block;
    }
  // cycle 1 is sequential; the default (no interleave) too.
  std::vector<std::string> seq;
  for (size_t f = 0; f < counts.size(); ++f)
    for (int r = 0; r < counts[f]; ++r) seq.push_back(record_name(int(f), r));
  EXPECT_EQ(names(drain(Dataset::from_files(paths))), seq);
}

TEST(Interleave, ReferenceSanity) {
  // Hand-checked: files a(3) b(1) c(2), cycle 2, block 2 -> a0 a1 b0 a2 c0 c1.
  EXPECT_EQ(interleave_reference({3, 1, 2}, 2, 2),
            (std::vector<std::string>{"f0r0", "f0r1", "f1r0", "f0r2", "f2r0", "f2r1"}));
}

TEST(Source, SourcesNameFileRecordAndOffset) {
  ScratchDir dir("sources");
  auto paths = write_named_shards(dir, {3, 2});
  auto items = drain(Dataset::from_files(paths));
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[4].source.file, 1u);
  EXPECT_EQ(items[4].source.record, 1u);
  // Plain file: frame of record 0 is 16 + 4 bytes ("f1r0"), so record 1 starts at 20.
  EXPECT_EQ(items[4].source.offset, 20u);
}

TEST(Shard, PartitionsExactlyWithEqualCountsByFile) {
  ScratchDir dir("shard-file");
  auto paths = write_named_shards(dir, {4, 4, 4, 4, 4, 4});
  std::multiset<std::string> all;
  for (int world : {1, 2, 3, 6}) {
    std::multiset<std::string> seen;
    for (int rank = 0; rank < world; ++rank) {
      Dataset ds = Dataset::from_files(paths);
      ds.shard(rank, world);
      EXPECT_EQ(ds.plan().mode, world == 1 ? ShardMode::kAll : ShardMode::kByFile);
      auto got = names(drain(ds));
      EXPECT_EQ(got.size(), 24u / world);
      EXPECT_EQ(got.size(), ds.records_per_epoch());
      // FastNN's rule: rank r reads the files with index % world == r.
      for (const auto& n : got) EXPECT_EQ((n[1] - '0') % world, rank) << n;
      seen.insert(got.begin(), got.end());
    }
    EXPECT_EQ(seen.size(), 24u);
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 24u);  // disjoint
  }
}

TEST(Shard, ByRecordWhenFilesDoNotDivideOrCountsDiffer) {
  ScratchDir dir("shard-record");
  // 5 files (do not divide by 2 or 3); also 4 files of unequal size for world 2.
  auto five = write_named_shards(dir, {3, 3, 3, 3, 2});
  for (int world : {2, 3, 4}) {
    std::set<std::string> seen;
    uint64_t per_rank = 0;
    for (int rank = 0; rank < world; ++rank) {
      Dataset ds = Dataset::from_files(five);
      ds.shard(rank, world).interleave(2, 1);
      EXPECT_EQ(ds.plan().mode, ShardMode::kByRecord);
      auto got = names(drain(ds));
      if (rank == 0) per_rank = got.size();
      EXPECT_EQ(got.size(), per_rank) << "equal counts";
      EXPECT_EQ(got.size(), 14u / world);
      for (const auto& n : got) EXPECT_TRUE(seen.insert(n).second) << "duplicate " << n;
    }
    EXPECT_EQ(seen.size(), 14u / world * world);
    Dataset probe = Dataset::from_files(five);
    probe.shard(0, world);
    EXPECT_EQ(probe.plan().dropped_per_epoch, 14u % world);
  }
  ScratchDir dir2("shard-unequal");
  auto unequal = write_named_shards(dir2, {4, 3, 4, 4});
  Dataset ds = Dataset::from_files(unequal);
  ds.shard(1, 2);
  EXPECT_EQ(ds.plan().mode, ShardMode::kByRecord);  // by file would give 8 vs 7
  EXPECT_EQ(ds.records_per_epoch(), 7u);
}

TEST(Shuffle, PermutationDeterministicWithSeed) {
  ScratchDir dir("shuffle");
  auto paths = write_named_shards(dir, {40, 40, 20});
  auto plain = names(drain(Dataset::from_files(paths)));
  std::multiset<std::string> expect(plain.begin(), plain.end());
  for (size_t buffer : {size_t{1}, size_t{7}, size_t{100}, size_t{1000}}) {
    auto a = names(drain(Dataset::from_files(paths).shuffle(buffer, 42)));
    auto b = names(drain(Dataset::from_files(paths).shuffle(buffer, 42)));
    auto c = names(drain(Dataset::from_files(paths).shuffle(buffer, 43)));
    EXPECT_EQ(std::multiset<std::string>(a.begin(), a.end()), expect) << "permutation, buffer " << buffer;
    EXPECT_EQ(a, b) << "same seed, same order";
    if (buffer == 1) {
      EXPECT_EQ(a, plain) << "a buffer of one does not reorder";
    } else {
      EXPECT_NE(a, plain);
      EXPECT_NE(a, c);
    }
  }
}

TEST(Shuffle, FullBufferIsRoughlyUniform) {
  // With the buffer holding everything, record 0 should land in each of 4 quarters ~equally often.
  ScratchDir dir("shuffle-uniform");
  auto paths = write_named_shards(dir, {16});
  int quarters[4] = {};
  for (uint64_t seed = 0; seed < 800; ++seed) {
    auto got = names(drain(Dataset::from_files(paths).shuffle(16, seed)));
    size_t pos = std::find(got.begin(), got.end(), "f0r0") - got.begin();
    ++quarters[pos / 4];
  }
  for (int q : quarters) EXPECT_NEAR(q, 200, 60);
}

TEST(Repeat, EpochBoundariesAndReshuffle) {
  ScratchDir dir("repeat");
  auto paths = write_named_shards(dir, {6, 5});
  auto items = drain(Dataset::from_files(paths).shuffle(4, 9).repeat(3));
  ASSERT_EQ(items.size(), 33u);
  std::vector<std::vector<std::string>> epochs(3);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i].epoch, int64_t(i / 11));
    EXPECT_EQ(items[i].index, i % 11);
    epochs[i / 11].push_back(items[i].bytes);
  }
  for (auto& e : epochs) {
    std::set<std::string> s(e.begin(), e.end());
    EXPECT_EQ(s.size(), 11u) << "each epoch is a permutation of all records";
  }
  EXPECT_NE(epochs[0], epochs[1]) << "reshuffled each iteration";
  auto fixed = drain(Dataset::from_files(paths).shuffle(4, 9, /*reshuffle_each_iteration=*/false).repeat(2));
  std::vector<std::string> e0, e1;
  for (auto& i : fixed) (i.epoch == 0 ? e0 : e1).push_back(i.bytes);
  EXPECT_EQ(e0, e1);
  EXPECT_EQ(e0, epochs[0]) << "epoch 0 order does not depend on reshuffle";
}

TEST(Cache, EpochTwoServedFromMemoryWithoutReading) {
  ScratchDir dir("cache-mem");
  auto paths = write_named_shards(dir, {7, 9});
  Dataset ds = Dataset::from_files(paths);
  ds.interleave(2, 1).cache().repeat(3);
  auto it = ds.make_record_iterator();
  RecordItem r;
  std::vector<std::vector<std::pair<std::string, SampleSource>>> epochs(3);
  uint64_t opened_after_epoch0 = 0, read_after_epoch0 = 0, bytes_after_epoch0 = 0;
  while (it->next(&r)) {
    if (r.epoch == 1 && r.index == 0) {
      opened_after_epoch0 = it->counters().files_opened;
      read_after_epoch0 = it->counters().records_read;
      bytes_after_epoch0 = it->counters().bytes_read;
    }
    epochs[r.epoch].push_back({std::string(r.bytes), r.source});
  }
  EXPECT_EQ(opened_after_epoch0, 2u);
  EXPECT_EQ(read_after_epoch0, 16u);
  EXPECT_EQ(it->counters().files_opened, 2u) << "no file opened after the first epoch";
  EXPECT_EQ(it->counters().records_read, 16u);
  EXPECT_EQ(it->counters().bytes_read, bytes_after_epoch0);
  EXPECT_EQ(it->counters().cache_records, 32u);
  EXPECT_EQ(epochs[1], epochs[0]);
  EXPECT_EQ(epochs[2], epochs[0]);
  // Without cache, every epoch reopens the files.
  auto it2 = Dataset::from_files(paths).repeat(3).make_record_iterator();
  while (it2->next(&r)) {
  }
  EXPECT_EQ(it2->counters().files_opened, 6u);
}

TEST(Cache, FileCacheIsWrittenOnceAndReused) {
  ScratchDir dir("cache-file");
  auto paths = write_named_shards(dir, {5, 5});
  std::string cache = dir.file("cache.tfrecord");
  Dataset ds = Dataset::from_files(paths);
  ds.cache(cache).shuffle(3, 1).repeat(2);
  auto first = drain(ds);
  ASSERT_TRUE(std::filesystem::exists(cache));
  // A second run reads the cache file, not the shards: remove the shards to prove it.
  for (auto& p : paths) std::filesystem::remove(p);
  auto it = ds.make_record_iterator();
  RecordItem r;
  std::vector<std::string> again;
  while (it->next(&r)) {
    again.push_back(std::string(r.bytes));
    EXPECT_EQ(r.source.file, SampleSource::kCacheFile);
  }
  EXPECT_EQ(again, names(first));
  EXPECT_EQ(it->counters().files_opened, 0u);
  // A cache for another shard plan is refused.
  write_named_shards(dir, {5, 5});
  Dataset other = Dataset::from_files(paths);
  other.shard(1, 2).cache(cache);
  EXPECT_THROW(other.make_record_iterator(), ConfigError);
}

TEST(Compression, GzipAndZlibShardsReadTransparently) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    ScratchDir sub(str("compressed-", compression_name(c)));
    auto paths = write_named_shards(sub, {4, 3}, c);
    auto got = names(drain(Dataset::from_files(paths).interleave(2, 1)));
    EXPECT_EQ(got, interleave_reference({4, 3}, 2, 1)) << compression_name(c);
  }
}

TEST(Corrupt, MidEpochErrorNamesFileAndOffset) {
  ScratchDir dir("corrupt");
  auto paths = write_named_shards(dir, {6, 6});
  testing::corrupt_record(paths[1], 3);
  auto it = Dataset::from_files(paths).make_record_iterator();
  RecordItem r;
  int n = 0;
  try {
    while (it->next(&r)) ++n;
    FAIL() << "no error";
  } catch (const FormatError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(paths[1]), std::string::npos) << msg;
    EXPECT_NE(msg.find("offset 60"), std::string::npos) << msg;
    EXPECT_NE(msg.find("record 3"), std::string::npos) << msg;
  }
  EXPECT_EQ(n, 9);
}

TEST(Corrupt, SkippedAndCountedWhenAsked) {
  ScratchDir dir("corrupt-skip");
  auto paths = write_named_shards(dir, {6, 6});
  testing::corrupt_record(paths[0], 2);
  DatasetOptions o;
  o.skip_corrupt = true;
  Dataset ds = Dataset::from_files(paths);
  ds.with_options(o);
  auto it = ds.make_record_iterator();
  RecordItem r;
  std::vector<std::string> got;
  while (it->next(&r)) got.push_back(std::string(r.bytes));
  EXPECT_EQ(it->counters().corrupt_skipped, 1u);
  // Records before the corrupt one survive; the rest of that file is dropped; the next file is whole.
  EXPECT_EQ(got, (std::vector<std::string>{"f0r0", "f0r1", "f1r0", "f1r1", "f1r2", "f1r3", "f1r4", "f1r5"}));
}

TEST(Builder, StagesOutOfOrderAreRefused) {
  ScratchDir dir("order");
  auto paths = write_named_shards(dir, {2});
  Dataset ds = Dataset::from_files(paths);
  ds.repeat(2);
  EXPECT_THROW(ds.shuffle(4, 1), ConfigError);
  Dataset ds2 = Dataset::from_files(paths);
  ds2.shuffle(4, 1);
  EXPECT_THROW(ds2.cache(), ConfigError);
  EXPECT_THROW(Dataset::from_files(paths).shard(2, 2), ConfigError);
  EXPECT_THROW(Dataset::from_files(paths).repeat(0), ConfigError);
}

}  // namespace
}  // namespace fastnn::pipeline
