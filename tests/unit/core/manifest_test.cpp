// core/manifest: JSON round trip, the consistency rules applied to untrusted manifests, shard names,
// labels.txt.
#include "core/manifest.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace fastnn {
namespace {

Manifest sample_manifest() {
  Manifest m;
  m.dataset = "mnist";
  m.created_by = "fastnn test";
  m.inputs = {"/data/mnist"};
  m.class_names = {"zero", "one", "two"};
  m.seed = 18446744073709551615ull;  // the full uint64 range survives JSON
  m.num_gpus = 2;
  m.shards_per_gpu = 1;
  m.compression = "gzip";
  m.remainder = "pad";
  m.stratified = true;
  m.image = {"png", 28, 28, 1};
  SplitInfo train;
  train.name = "train";
  train.equal_shards = true;
  train.num_source_samples = 5;
  train.shards = {{"train-00000-of-00002.tfrecord", 3, 300, {1, 1, 1}},
                  {"train-00001-of-00002.tfrecord", 3, 310, {2, 0, 1}}};
  train.num_records = 6;
  train.label_histogram = {3, 1, 2};
  train.padded = {{"train-images#4", 0, 1}};
  train.skipped = {{"train-labels#9", "label 12 is outside 0..2"}};
  SplitInfo test;
  test.name = "test";
  test.shards = {{"test-00000-of-00002.tfrecord", 2, 100, {0, 2, 0}}, {"test-00001-of-00002.tfrecord", 1, 50, {0, 0, 1}}};
  test.num_records = 3;
  test.num_source_samples = 3;
  test.label_histogram = {0, 2, 1};
  test.ignored_files = 4;
  test.ignored = {{"val/roses/a.webp", "a WebP image: only JPEG and PNG are converted"}, {"val/.DS_Store", "hidden"}};
  m.class_names_source = "--labels-from data/train";
  m.splits = {train, test};
  return m;
}

void expect_bad(const std::string& json_text, const std::string& needle) {
  try {
    parse_manifest(json_text, "m.json");
    ADD_FAILURE() << "accepted; expected an error containing " << needle;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
  }
}

TEST(Manifest, RoundTrip) {
  Manifest m = sample_manifest();
  std::string text = serialize_manifest(m);
  Manifest r = parse_manifest(text);
  EXPECT_EQ(serialize_manifest(r), text);
  EXPECT_EQ(r.seed, m.seed);
  ASSERT_EQ(r.splits.size(), 2u);
  EXPECT_EQ(r.splits[0].name, "train");  // order kept
  EXPECT_EQ(r.splits[1].name, "test");
  EXPECT_EQ(r.splits[0].shards[1].label_histogram, (std::vector<uint64_t>{2, 0, 1}));
  EXPECT_EQ(r.splits[0].padded[0].shard, 1);
  EXPECT_EQ(r.splits[0].skipped[0].reason, "label 12 is outside 0..2");
  EXPECT_EQ(r.splits[1].ignored_files, 4u);
  ASSERT_EQ(r.splits[1].ignored.size(), 2u);
  EXPECT_EQ(r.splits[1].ignored[0].source, "val/roses/a.webp");
  EXPECT_EQ(r.splits[1].ignored[1].reason, "hidden");
  EXPECT_EQ(r.class_names_source, "--labels-from data/train");
  EXPECT_EQ(r.num_shards(), 2);
  EXPECT_EQ(r.find_split("test")->num_records, 3u);
  EXPECT_EQ(r.find_split("validation"), nullptr);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["num_classes"], 3);
  EXPECT_EQ(j["format"], "fastnn-shards");
  // Manifests written before ignored files were named, or without a names source, still read.
  for (auto& [name, split] : j["splits"].items()) split.erase("ignored");
  j.erase("class_names_source");
  const Manifest old = parse_manifest(j.dump());
  EXPECT_TRUE(old.splits[1].ignored.empty());
  EXPECT_EQ(old.splits[1].ignored_files, 4u);
  EXPECT_EQ(old.class_names_source, "");
}

TEST(Manifest, RejectsInconsistentManifests) {
  const std::string good = serialize_manifest(sample_manifest());
  auto edit = [&](auto fn) {
    auto j = nlohmann::json::parse(good);
    fn(j);
    return j.dump();
  };
  expect_bad("{not json", "not valid JSON");
  expect_bad("[1,2]", "not a JSON object");
  expect_bad(edit([](auto& j) { j["format"] = "other"; }), "format");
  expect_bad(edit([](auto& j) { j["version"] = 99; }), "newer fastnn");
  expect_bad(edit([](auto& j) { j["num_classes"] = 4; }), "num_classes");
  expect_bad(edit([](auto& j) { j.erase("seed"); }), "seed: is missing");
  expect_bad(edit([](auto& j) { j["num_gpus"] = 3; }), "shards");
  expect_bad(edit([](auto& j) { j["splits"]["train"]["shards"][0]["records"] = 4; }), "splits.train.shards[0].label_histogram");
  expect_bad(edit([](auto& j) { j["splits"]["train"]["shards"][0]["file"] = "../../etc/passwd"; }), "file");
  expect_bad(edit([](auto& j) { j["splits"]["train"]["label_histogram"][0] = 9; }), "label_histogram");
  expect_bad(edit([](auto& j) { j["splits"]["test"]["ignored_files"] = 1; }), "splits.test.ignored: names 2 files");
  expect_bad(edit([](auto& j) { j["splits"]["test"]["ignored"][0].erase("reason"); }), "splits.test.ignored[0].reason");
  expect_bad(edit([](auto& j) { j["splits"]["train"]["shards"][0]["label_histogram"] = {1, 1}; }), "entries");
  expect_bad(edit([](auto& j) { j["splits"]["train"]["num_records"] = -1; }), "num_records");
  expect_bad(edit([](auto& j) { j["split_order"] = {"train"}; }), "split_order");
  expect_bad(edit([](auto& j) { j["compression"] = "lz4"; }), "compression");
  // A test split may differ by one between shards, never more.
  expect_bad(edit([](auto& j) {
               j["splits"]["test"]["shards"][0]["records"] = 3;
               j["splits"]["test"]["shards"][0]["label_histogram"] = {0, 3, 0};
               j["splits"]["test"]["shards"][1]["records"] = 0;
               j["splits"]["test"]["shards"][1]["label_histogram"] = {0, 0, 0};
               j["splits"]["test"]["label_histogram"] = {0, 3, 0};
             }),
             "more than one apart");
  // Train shards must be exactly equal.
  expect_bad(edit([](auto& j) {
               j["splits"]["train"]["shards"][1]["records"] = 2;
               j["splits"]["train"]["shards"][1]["label_histogram"] = {1, 0, 1};
               j["splits"]["train"]["num_records"] = 5;
               j["splits"]["train"]["label_histogram"] = {2, 1, 2};
             }),
             "equal_shards");
  // Writing applies the same rules.
  Manifest bad = sample_manifest();
  bad.splits[0].shards.pop_back();
  EXPECT_THROW(serialize_manifest(bad), FormatError);
}

TEST(Manifest, ShardNames) {
  EXPECT_EQ(shard_file_name("train", 3, 16), "train-00003-of-00016.tfrecord");
  EXPECT_EQ(shard_file_name("validation", 0, 123456), "validation-00000-of-123456.tfrecord");
  for (const char* ok : {"train-00000-of-00001.tfrecord", "my_split-2-00009-of-00010.tfrecord"})
    EXPECT_TRUE(is_shard_file_name(ok)) << ok;
  for (const char* no : {"train-0-of-1.tfrecord", ".train-00000-of-00001.tfrecord", "train-00000-of-00001.tfrecord.fastnn-tmp",
                         "-00000-of-00001.tfrecord", "train-0000a-of-00001.tfrecord", "manifest.json", "a/b-00000-of-00001.tfrecord"})
    EXPECT_FALSE(is_shard_file_name(no)) << no;
  EXPECT_NO_THROW(validate_split_name("train"));
  EXPECT_THROW(validate_split_name("a/b"), ConfigError);
  EXPECT_THROW(validate_split_name(""), ConfigError);
}

TEST(Manifest, LabelsTxt) {
  std::vector<std::string> names = {"T-shirt/top", "Trouser", "a: b"};
  std::string text = format_labels_txt(names);
  EXPECT_EQ(text, "0:T-shirt/top\n1:Trouser\n2:a: b\n");
  EXPECT_EQ(parse_labels_txt(text, "labels.txt"), names);
  EXPECT_EQ(parse_labels_txt("1:b\r\n\n0:a\n", "l"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parse_labels_txt("airplane\nautomobile\n\n", "l"), (std::vector<std::string>{"airplane", "automobile"}));
  EXPECT_THROW(parse_labels_txt("0:a\n0:b\n", "l"), FormatError);  // duplicate id
  EXPECT_THROW(parse_labels_txt("0:a\n2:b\n", "l"), FormatError);  // gap
  try {
    parse_labels_txt("0:a\n\n5:b\n", "labels.txt");
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("labels.txt:3"), std::string::npos) << e.what();
  }
}

TEST(Manifest, ReadFromDirectory) {
  auto dir = std::filesystem::temp_directory_path() / ("fastnn_manifest_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "manifest.json") << serialize_manifest(sample_manifest());
  }
  EXPECT_EQ(read_manifest(dir.string()).dataset, "mnist");
  EXPECT_EQ(read_manifest((dir / "manifest.json").string()).num_gpus, 2);
  std::filesystem::remove_all(dir);
  EXPECT_THROW(read_manifest(dir.string()), IoError);
}

}  // namespace
}  // namespace fastnn
