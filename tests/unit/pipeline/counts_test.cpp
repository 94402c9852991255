// Counts read from files are checked (issue 18): the reader verifies the records each shard really
// holds against the manifest's per-shard counts and names the shard on a mismatch; totals and step
// products cannot overflow.
#include <gtest/gtest.h>

#include <fstream>

#include "core/checked_math.h"
#include "core/manifest.h"
#include "pipeline/dataset.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

using testing::ScratchDir;

// A manifest over two real shards of 3 and 3 records, with the first shard's count replaced.
void write_set(const ScratchDir& dir, uint64_t claimed0) {
  Manifest m;
  m.dataset = "test";
  m.class_names = {"a"};
  m.num_gpus = 2;
  SplitInfo s;
  s.name = "train";
  s.equal_shards = false;
  for (int k = 0; k < 2; ++k) {
    const std::string name = shard_file_name("train", k, 2);
    TFRecordWriter w(dir.file(name));
    for (int r = 0; r < 3; ++r) w.write(testing::record_name(k, r));
    w.close();
    const uint64_t n = k == 0 ? claimed0 : 3;
    s.shards.push_back({name, n, 100, {n}});
    s.num_records += n;
  }
  s.num_source_samples = 6;
  s.label_histogram = {s.num_records};
  m.splits.push_back(s);
  std::ofstream(dir.file("manifest.json")) << serialize_manifest(m);
}

std::string drain_error(const Dataset& ds) {
  auto it = ds.make_record_iterator();
  RecordItem item;
  try {
    while (it->next(&item)) {
    }
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(Counts, InflatedManifestCountNamesTheShard) {
  ScratchDir dir("counts_inflated");
  write_set(dir, 4);  // the shard holds 3
  Dataset ds = Dataset::from_manifest(dir.path().string(), "train");
  EXPECT_EQ(ds.records_per_epoch(), 7u);
  const std::string err = drain_error(ds);
  EXPECT_NE(err.find("train-00000-of-00002.tfrecord"), std::string::npos) << err;
  EXPECT_NE(err.find("holds 3 records"), std::string::npos) << err;
  EXPECT_NE(err.find("says 4"), std::string::npos) << err;
}

TEST(Counts, DeflatedManifestCountFailsAtTheExtraRecord) {
  ScratchDir dir("counts_deflated");
  write_set(dir, 2);  // the shard holds 3
  const std::string err = drain_error(Dataset::from_manifest(dir.path().string(), "train"));
  EXPECT_NE(err.find("train-00000-of-00002.tfrecord: holds more than 2 records"), std::string::npos) << err;
}

TEST(Counts, MatchingCountsReadClean) {
  ScratchDir dir("counts_ok");
  write_set(dir, 3);
  EXPECT_EQ(drain_error(Dataset::from_manifest(dir.path().string(), "train")), "");
}

TEST(Counts, HugeManifestCountsAreAFormatErrorNotAWrap) {
  ScratchDir dir("counts_huge");
  Manifest m;
  m.dataset = "test";
  m.class_names = {"a"};
  m.num_gpus = 2;
  SplitInfo s;
  s.name = "train";
  s.equal_shards = true;
  const uint64_t big = uint64_t{1} << 62;
  for (int k = 0; k < 2; ++k) s.shards.push_back({shard_file_name("train", k, 2), big, 100, {big}});
  s.num_records = 0;  // 2^63 wraps in int64; the sum check must trip before any comparison
  s.label_histogram = {0};
  m.splits.push_back(s);
  EXPECT_THROW(serialize_manifest(m), FormatError);
}

TEST(Counts, CheckedMath) {
  EXPECT_EQ(checked_mul<int64_t>(3, 4, "x"), 12);
  EXPECT_THROW(checked_mul<int64_t>(INT64_MAX / 2, 3, "steps"), Error);
  EXPECT_THROW(checked_add<uint64_t>(UINT64_MAX, 1, "records"), Error);
  EXPECT_THROW(checked_int64(uint64_t{1} << 63, "n"), Error);
}

}  // namespace
}  // namespace fastnn::pipeline
