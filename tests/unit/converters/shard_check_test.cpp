// `fastnn check`'s engine: a good set passes (with and without decoding); each kind of damage is found
// and attributed to its shard: a flipped byte (CRC), a bad label, a format lie, unbalanced shards, a
// missing shard, a GPU count that does not divide the shards.
#include "converters/shard_check.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "convert_test_util.h"
#include "converters/image_example.h"
#include "converters/synthetic.h"

namespace fastnn::converters {
namespace {

using namespace testing;

void make_good_set(const std::string& out, uint64_t records = 400) {
  SyntheticOptions so;
  so.num_records = records;
  so.num_test_records = 50;
  so.height = so.width = 8;
  so.num_classes = 10;
  so.image_format = "png";
  SyntheticSource src(so);
  run_conversion(src, options_for(out, 2, 2));
}

CheckOptions check_options(const std::string& dir) {
  CheckOptions o;
  o.dir = dir;
  o.quiet = true;
  o.threads = 2;
  return o;
}

bool any_error_contains(const CheckReport& r, const std::string& needle) {
  auto has = [&](const std::vector<std::string>& v) {
    for (const std::string& e : v)
      if (e.find(needle) != std::string::npos) return true;
    return false;
  };
  if (has(r.errors)) return true;
  for (const SplitReport& s : r.splits) {
    if (has(s.errors)) return true;
    for (const ShardReport& sh : s.shards)
      if (has(sh.errors)) return true;
  }
  return false;
}

TEST(ShardCheck, GoodSetPasses) {
  TempDir t;
  make_good_set(t / "s");
  for (bool decode : {false, true}) {
    CheckOptions o = check_options(t / "s");
    o.decode = decode;
    CheckReport r = check_shard_set(o);
    EXPECT_TRUE(r.ok()) << r.error_count();
    EXPECT_EQ(r.records, 400u + 50u);
    ASSERT_EQ(r.splits.size(), 2u);
    EXPECT_EQ(r.splits[0].per_gpu, (std::vector<uint64_t>{200, 200}));
    EXPECT_GT(r.splits[0].min_p_value, 1e-6);
    EXPECT_EQ(r.splits[0].shards[0].balance.dof, 9);
  }
  CheckOptions o = check_options(t / "s");
  o.split = "test";
  EXPECT_EQ(check_shard_set(o).records, 50u);
  o.split = "nope";
  EXPECT_THROW(check_shard_set(o), ConfigError);
  o.split = "";
  o.num_gpus = 3;  // 4 shards over 3 GPUs
  CheckReport r = check_shard_set(o);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(any_error_contains(r, "3 does not divide 4"));
  o.num_gpus = 4;
  EXPECT_TRUE(check_shard_set(o).ok());
}

TEST(ShardCheck, FlippedByteIsACrcErrorInThatShard) {
  TempDir t;
  make_good_set(t / "s");
  std::string p = t / "s/train-00002-of-00004.tfrecord";
  std::string b = read_file(p);
  b[b.size() / 2] ^= 0x20;
  write_file(p, b);
  CheckReport r = check_shard_set(check_options(t / "s"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.splits[0].shards[2].error_count, 2u);  // the CRC, then the count that falls short
  EXPECT_NE(r.splits[0].shards[2].errors[0].find("CRC"), std::string::npos) << r.splits[0].shards[2].errors[0];
  EXPECT_EQ(r.splits[0].shards[1].error_count, 0u);
  // A missing shard.
  std::filesystem::remove(t / "s/test-00001-of-00004.tfrecord");
  r = check_shard_set(check_options(t / "s"));
  EXPECT_EQ(r.splits[1].shards[1].errors.at(0), "file is missing");
  // No manifest: the shards are checked on their own (the CRC error is still found), and the report
  // says what could not be checked.
  std::filesystem::remove(t / "s/manifest.json");
  r = check_shard_set(check_options(t / "s"));
  EXPECT_FALSE(r.has_manifest);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.not_checked.empty());
  ASSERT_EQ(r.splits.at(0).name, "train");
  EXPECT_NE(r.splits[0].shards.at(2).errors.at(0).find("CRC"), std::string::npos);
  EXPECT_EQ(r.splits[0].shards[2].error_count, 1u);  // no expected count to fall short of
  // An invalid manifest still throws: nothing can be checked against it.
  write_file(t / "s/manifest.json", "{");
  EXPECT_THROW(check_shard_set(check_options(t / "s")), FormatError);
}

// A hand-made shard set: `shards[k]` lists the records of shard k as (label, format, bytes).
struct Rec {
  int64_t label;
  std::string format;
  std::string bytes;
  int h = 4, w = 4, c = 1;
};
void write_set(const std::string& dir, const std::vector<std::vector<Rec>>& shards, int classes) {
  std::filesystem::create_directories(dir);
  Manifest m;
  m.dataset = "hand";
  for (int c = 0; c < classes; ++c) m.class_names.push_back(std::to_string(c));
  m.num_gpus = static_cast<int64_t>(shards.size());
  SplitInfo s;
  s.name = "test";
  s.label_histogram.assign(classes, 0);
  for (size_t k = 0; k < shards.size(); ++k) {
    ShardInfo sh;
    sh.file = shard_file_name("test", static_cast<int64_t>(k), static_cast<int64_t>(shards.size()));
    sh.label_histogram.assign(classes, 0);
    {
      TFRecordWriter w(dir + "/" + sh.file);
      for (const Rec& r : shards[k]) {
        std::string rec;
        serialize_image_example(r.bytes, r.format.c_str(), r.h, r.w, r.c, r.label, -1, &rec);
        w.write(rec);
        // An out-of-range label is counted as class 0: the manifest stays valid, the records do not.
        int64_t l = r.label >= 0 && r.label < classes ? r.label : 0;
        ++sh.label_histogram[l];
        ++s.label_histogram[l];
        ++sh.records;
      }
      w.close();
    }
    sh.bytes = std::filesystem::file_size(dir + "/" + sh.file);
    s.num_records += sh.records;
    s.shards.push_back(sh);
  }
  m.splits.push_back(s);
  write_file(dir + "/manifest.json", serialize_manifest(m));
}

TEST(ShardCheck, RecordProblems) {
  TempDir t;
  std::vector<uint8_t> px(16, 9);
  std::string png = encode_png(px.data(), 4, 4, 1);
  std::string jpg = encode_jpeg(px.data(), 4, 4, 1, 90);
  std::vector<std::vector<Rec>> shards = {
      {{0, "png", png}, {1, "png", jpg}, {1, "raw", std::string(16, 'x')}},  // format lie
      {{0, "png", png}, {1, "png", png, 5, 4, 1}, {0, "raw", std::string(15, 'x')}},  // wrong height, short raw
  };
  write_set(t / "s", shards, 2);
  CheckReport r = check_shard_set(check_options(t / "s"));
  EXPECT_EQ(r.splits[0].shards[0].error_count, 1u);
  EXPECT_NE(r.splits[0].shards[0].errors[0].find("record 1 at offset"), std::string::npos) << r.splits[0].shards[0].errors[0];
  EXPECT_NE(r.splits[0].shards[0].errors[0].find("image/format says png but image/encoded is jpeg"), std::string::npos);
  EXPECT_EQ(r.splits[0].shards[1].error_count, 2u);
  EXPECT_TRUE(any_error_contains(r, "header says 4x4x1, the record says 5x4x1"));
  EXPECT_TRUE(any_error_contains(r, "raw image holds 15 bytes"));
}

TEST(ShardCheck, UnshuffledShardsFailTheBalanceTest) {
  TempDir t;
  std::vector<uint8_t> px(16, 9);
  std::string png = encode_png(px.data(), 4, 4, 1);
  // Sorted data cut into shards: shard 0 all class 0, shard 1 all class 1.
  std::vector<std::vector<Rec>> sorted(2);
  for (int i = 0; i < 60; ++i) sorted[i / 30].push_back({i / 30, "png", png});
  write_set(t / "sorted", sorted, 2);
  CheckReport r = check_shard_set(check_options(t / "sorted"));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(any_error_contains(r, "not shuffled"));
  EXPECT_LT(r.splits[0].min_p_value, 1e-7);  // chi-square 30, 1 dof
  // The same records mixed: passes.
  std::vector<std::vector<Rec>> mixed(2);
  for (int i = 0; i < 60; ++i) mixed[i % 2].push_back({(i / 2) % 2, "png", png});
  write_set(t / "mixed", mixed, 2);
  EXPECT_TRUE(check_shard_set(check_options(t / "mixed")).ok());
  // A label outside the classes.
  std::vector<std::vector<Rec>> bad = {{{0, "png", png}}, {{7, "png", png}}};
  write_set(t / "label", bad, 2);
  r = check_shard_set(check_options(t / "label"));
  EXPECT_TRUE(any_error_contains(r, "image/class/label 7 is outside 0..1"));
}

// A shuffled split of 94:2 with a third class missing passes the shard balance test: the classes are
// warned about, with and without a manifest.
TEST(ShardCheck, WarnsAboutImbalancedAndMissingClasses) {
  TempDir t;
  std::vector<uint8_t> px(16, 9);
  std::string png = encode_png(px.data(), 4, 4, 1);
  std::vector<std::vector<Rec>> shards(2);
  for (auto& sh : shards) {
    for (int i = 0; i < 47; ++i) sh.push_back({0, "png", png});
    sh.insert(sh.begin() + 20, Rec{1, "png", png});
  }
  write_set(t / "s", shards, 3);
  CheckReport r = check_shard_set(check_options(t / "s"));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.splits[0].classes.counts, (std::vector<uint64_t>{94, 2, 0}));
  EXPECT_DOUBLE_EQ(r.splits[0].classes.ratio, 47.0);
  EXPECT_EQ(r.splits[0].classes.missing, (std::vector<int64_t>{2}));
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("split test: class 0 \"0\" has 94 records, class 1 \"1\" 2: 47.0 times"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("split test has no record of 1 of the 3 classes: 2 \"2\""), std::string::npos)
      << r.warnings[1];
  CheckOptions o = check_options(t / "s");
  o.max_class_ratio = 50;
  EXPECT_EQ(check_shard_set(o).warnings.size(), 1u);
  o.max_class_ratio = 0.5;
  EXPECT_THROW(check_shard_set(o), ConfigError);
  // Without the manifest the class count is the largest label + 1: the ratio is still seen.
  std::filesystem::remove(t / "s/manifest.json");
  r = check_shard_set(check_options(t / "s"));
  EXPECT_EQ(r.splits[0].classes.counts, (std::vector<uint64_t>{94, 2}));
  auto count = [&r](const char* needle) {
    return std::count_if(r.warnings.begin(), r.warnings.end(),
                         [needle](const std::string& w) { return w.find(needle) != std::string::npos; });
  };
  EXPECT_EQ(count("47.0 times as many"), 1);
  EXPECT_EQ(count("has no record"), 0);
}

TEST(ShardCheck, WarnsAboutStrayFiles) {
  TempDir t;
  make_good_set(t / "s", 40);
  write_file(t / "s/train-00000-of-00008.tfrecord", "old");
  write_file(t / "s/.train-00000-of-00004.tfrecord.fastnn-tmp", "tmp");
  CheckReport r = check_shard_set(check_options(t / "s"));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.warnings.size(), 2u);
}

}  // namespace
}  // namespace fastnn::converters
