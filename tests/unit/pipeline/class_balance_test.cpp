// balance_classes(): per epoch every class sends the same number of records (±1), the epoch keeps its
// length, the records repeated or passed over change from epoch to epoch but not from run to run, and
// counts that disagree with the records are errors naming the record.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "core/manifest.h"
#include "pipeline/dataset.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

using testing::ScratchDir;

// Shard k's records: (label, name) in file order; names are "f<k>r<i>".
using BalanceShard = std::vector<int>;

// Writes the shards and a manifest over them; `claimed` replaces shard 0's histogram when given.
void write_labelled_set(const ScratchDir& dir, const std::vector<BalanceShard>& shards, int num_classes,
                        std::vector<uint64_t> claimed = {}) {
  Manifest m;
  m.dataset = "test";
  for (int c = 0; c < num_classes; ++c) m.class_names.push_back(str("c", c));
  m.num_gpus = static_cast<int64_t>(shards.size());
  SplitInfo s;
  s.name = "train";
  s.label_histogram.assign(static_cast<size_t>(num_classes), 0);
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string name = shard_file_name("train", static_cast<int64_t>(k), static_cast<int64_t>(shards.size()));
    TFRecordWriter w(dir.file(name));
    std::vector<uint64_t> hist(static_cast<size_t>(num_classes), 0);
    for (size_t i = 0; i < shards[k].size(); ++i) {
      const int label = shards[k][i];
      w.write(testing::image_example(testing::record_name(static_cast<int>(k), static_cast<int>(i)), "raw", label));
      ++hist[static_cast<size_t>(label)];
    }
    w.close();
    if (k == 0 && !claimed.empty()) hist = claimed;
    for (size_t c = 0; c < hist.size(); ++c) s.label_histogram[c] += hist[c];
    s.shards.push_back({name, shards[k].size(), 100, hist});
    s.num_records += shards[k].size();
  }
  s.num_source_samples = s.num_records;
  s.equal_shards = false;
  m.splits.push_back(s);
  std::ofstream(dir.file("manifest.json")) << serialize_manifest(m);
}

struct BalancedDraw {
  int64_t label;
  std::string name;
};

// Every record of every epoch, per epoch.
std::vector<std::vector<BalancedDraw>> drain_balanced(const Dataset& ds) {
  ExampleParser parser({keys::kLabel, keys::kImageEncoded});
  std::vector<std::vector<BalancedDraw>> epochs;
  auto it = ds.make_record_iterator();
  RecordItem item;
  while (it->next(&item)) {
    if (static_cast<size_t>(item.epoch) >= epochs.size()) epochs.resize(static_cast<size_t>(item.epoch) + 1);
    FeatureView f[2];
    parser.parse(item.bytes, f);
    epochs[static_cast<size_t>(item.epoch)].push_back(
        {f[0].single_int64(keys::kLabel), std::string(f[1].single_bytes(keys::kImageEncoded))});
  }
  return epochs;
}

std::map<int64_t, int> classes_in(const std::vector<BalancedDraw>& epoch) {
  std::map<int64_t, int> n;
  for (const BalancedDraw& d : epoch) ++n[d.label];
  return n;
}

std::map<std::string, int> copies_in(const std::vector<BalancedDraw>& epoch) {
  std::map<std::string, int> n;
  for (const BalancedDraw& d : epoch) ++n[d.name];
  return n;
}

// 12 of class 0, 4 of class 1, 2 of class 2 in each of two shards, interleaved in file order.
std::vector<BalanceShard> skewed_shards() {
  BalanceShard s;
  for (int i = 0; i < 18; ++i) s.push_back(i % 9 < 6 ? 0 : (i % 9 < 8 ? 1 : 2));
  return {s, s};
}

TEST(ClassBalance, EveryClassSendsAsManyAndTheEpochKeepsItsLength) {
  ScratchDir dir("balance_counts");
  write_labelled_set(dir, skewed_shards(), 3);
  Dataset ds = Dataset::from_manifest(dir.path().string(), "train");
  ds.interleave(2).balance_classes(7).repeat(3);
  EXPECT_EQ(ds.records_per_epoch(), 36u);
  const auto epochs = drain_balanced(ds);
  ASSERT_EQ(epochs.size(), 3u);
  for (const auto& e : epochs) {
    EXPECT_EQ(e.size(), 36u);
    EXPECT_EQ(classes_in(e), (std::map<int64_t, int>{{0, 12}, {1, 12}, {2, 12}}));
    // Class 0 (24 records, 12 wanted): none twice. Class 1 (8, 12 wanted): each once or twice, 4
    // twice. Class 2 (4, 12 wanted): each exactly three times.
    std::map<int64_t, std::map<int, int>> copies;  // class -> copies -> records
    std::map<std::string, int64_t> label_of;
    for (const BalancedDraw& d : e) label_of[d.name] = d.label;
    for (const auto& [name, n] : copies_in(e)) ++copies[label_of[name]][n];
    EXPECT_EQ(copies[0], (std::map<int, int>{{1, 12}}));
    EXPECT_EQ(copies[1], (std::map<int, int>{{1, 4}, {2, 4}}));
    EXPECT_EQ(copies[2], (std::map<int, int>{{3, 4}}));
  }
  // Another half of class 0 is left out in another epoch.
  std::set<std::string> kept[2];
  for (int k = 0; k < 2; ++k)
    for (const BalancedDraw& d : epochs[static_cast<size_t>(k)])
      if (d.label == 0) kept[k].insert(d.name);
  EXPECT_NE(kept[0], kept[1]);
}

TEST(ClassBalance, SameSeedSameRecordsOtherSeedOthers) {
  ScratchDir dir("balance_seed");
  write_labelled_set(dir, skewed_shards(), 3);
  auto names = [&](uint64_t seed) {
    Dataset ds = Dataset::from_manifest(dir.path().string(), "train");
    ds.balance_classes(seed).shuffle(8, 1).repeat(2);
    std::vector<std::string> out;
    for (const auto& e : drain_balanced(ds))
      for (const BalancedDraw& d : e) out.push_back(d.name);
    return out;
  };
  EXPECT_EQ(names(3), names(3));
  EXPECT_NE(names(3), names(4));
}

TEST(ClassBalance, EachRankBalancesItsOwnShardsAndTheCacheIsBalancedAnew) {
  ScratchDir dir("balance_ranks");
  // Shard 0: 10 of class 0, 2 of class 1; shard 1: 4 of each of classes 1 and 2 plus 4 of class 0.
  write_labelled_set(dir, {{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}, {1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}}, 3);
  for (int rank = 0; rank < 2; ++rank) {
    Dataset ds = Dataset::from_manifest(dir.path().string(), "train");
    ds.shard(rank, 2).cache().balance_classes(5).repeat(3);
    EXPECT_EQ(ds.records_per_epoch(), 12u);
    const auto epochs = drain_balanced(ds);
    ASSERT_EQ(epochs.size(), 3u);
    const std::map<int64_t, int> want =
        rank == 0 ? std::map<int64_t, int>{{0, 6}, {1, 6}} : std::map<int64_t, int>{{0, 4}, {1, 4}, {2, 4}};
    for (const auto& e : epochs) EXPECT_EQ(classes_in(e), want) << "rank " << rank;
    if (rank == 0) {
      // Epochs 1 and 2 come from the cache; class 0's kept half still changes.
      std::set<std::string> kept[3];
      for (int k = 0; k < 3; ++k)
        for (const BalancedDraw& d : epochs[static_cast<size_t>(k)])
          if (d.label == 0) kept[k].insert(d.name);
      EXPECT_TRUE(kept[1] != kept[2] || kept[0] != kept[1]);
    }
  }
}

// A run resumed at a batch gives the uninterrupted run's batches from there on.
TEST(ClassBalance, AResumedRunRepeatsTheUninterruptedOne) {
  ScratchDir dir("balance_resume");
  write_labelled_set(dir, skewed_shards(), 3);
  auto parser = std::make_shared<ExampleParser>(std::vector<std::string>{keys::kLabel, keys::kImageEncoded});
  const BatchSpec spec{1, 8, 1, DType::kU8, Layout::kNHWC};
  auto mapper = make_function_mapper(spec, [parser](std::string_view rec, const SampleContext&, void* slot,
                                                    int32_t* label) {
    FeatureView f[2];
    parser->parse(rec, f);
    const std::string_view name = f[1].single_bytes(keys::kImageEncoded);
    std::memset(slot, 0, 8);
    std::memcpy(slot, name.data(), std::min<size_t>(name.size(), 8));
    *label = static_cast<int32_t>(f[0].single_int64(keys::kLabel));
  });
  Dataset ds = Dataset::from_manifest(dir.path().string(), "train");
  ds.interleave(2).balance_classes(9).shuffle(5, 2).repeat(3).map_and_batch(mapper, 4);
  auto batches = [&](uint64_t first) {
    std::vector<std::string> out;
    auto it = ds.make_iterator(first);
    BatchHandle b;
    while (it->next(&b)) {
      const auto* d = static_cast<const char*>(b->data());
      out.emplace_back(d, d + b->bytes());
      for (int i = 0; i < b->size(); ++i) out.back() += str(",", b->labels()[i]);
    }
    return out;
  };
  const std::vector<std::string> whole = batches(0);
  ASSERT_EQ(whole.size(), 27u);  // 36 records a epoch, batches of 4, 3 epochs
  const std::vector<std::string> resumed = batches(11);
  EXPECT_EQ(resumed, std::vector<std::string>(whole.begin() + 11, whole.end()));
}

// The FormatError rank 0 of 2 meets reading the set whose shard 0 claims `claimed`; "" when none.
std::string balance_error(const ScratchDir& dir, std::vector<uint64_t> claimed) {
  const BalanceShard s = {0, 0, 0, 1, 1, 2};
  write_labelled_set(dir, {s, s}, 3, std::move(claimed));
  Dataset ds = Dataset::from_manifest(dir.path().string(), "train");
  ds.shard(0, 2).balance_classes(1);
  try {
    drain_balanced(ds);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(ClassBalance, CountsThatDisagreeWithTheRecordsAreErrors) {
  ScratchDir dir("balance_errors");
  // Shard 0 holds 3 of class 0, 2 of class 1, 1 of class 2; the manifest says 2 of each.
  const std::string more = balance_error(dir, {2, 2, 2});
  EXPECT_NE(more.find("train-00000-of-00002.tfrecord: record 2"), std::string::npos) << more;
  EXPECT_NE(more.find("more records of class 0 than the 2"), std::string::npos) << more;
  // A label the counts give this rank none of.
  const std::string none = balance_error(dir, {4, 2, 0});
  EXPECT_NE(none.find("record 5 at offset"), std::string::npos) << none;
  EXPECT_NE(none.find("label 2, of which the shard histograms"), std::string::npos) << none;
}

TEST(ClassBalance, RefusedWithoutHistogramsOrPerRankCountsOrOutOfOrder) {
  ScratchDir dir("balance_refused");
  write_labelled_set(dir, {{0, 1}, {0, 1}, {0, 1}}, 2);
  auto refusal = [](auto&& build) -> std::string {
    try {
      build();
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  const std::string plain = refusal([&] {
    Dataset::from_files({dir.file(shard_file_name("train", 0, 3))}, {2}).balance_classes(1);
  });
  EXPECT_NE(plain.find("without a class histogram"), std::string::npos) << plain;
  const std::string by_record = refusal([&] {
    Dataset::from_manifest(dir.path().string(), "train").shard(0, 2).balance_classes(1);
  });
  EXPECT_NE(by_record.find("by record"), std::string::npos) << by_record;
  const std::string order = refusal([&] {
    Dataset::from_manifest(dir.path().string(), "train").shuffle(4, 1).balance_classes(1);
  });
  EXPECT_NE(order.find("balance_classes() after shuffle()"), std::string::npos) << order;
}

}  // namespace
}  // namespace fastnn::pipeline
