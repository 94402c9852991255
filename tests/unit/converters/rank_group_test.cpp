// A conversion split over ranks: threads stand in for mpirun's processes (ThreadRanks below), so the
// test needs no MPI. The same seed must give byte-identical files for 1, 2 and 3 ranks; a rank's failure
// is reported once, by rank 0, with that rank's error kind; ranks that see different inputs are refused.
#include "converters/rank_group.h"

#include <gtest/gtest.h>

#include <map>

#include "convert_test_util.h"
#include "thread_ranks.h"
#include "converters/base64_tsv.h"
#include "converters/shard_check.h"
#include "converters/synthetic.h"
#include "converters/tfrecord_source.h"
#include "core/base64.h"
#include "core/image_codecs.h"

namespace fastnn::converters {
namespace {

using namespace testing;

std::string what(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
  return "";
}

std::map<std::string, std::string> folder_bytes(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n != ".fastnn.lock") out[n] = read_file(e.path().string());
  }
  return out;
}

SyntheticOptions small_synthetic() {
  SyntheticOptions so;
  so.num_records = 203;  // not a multiple of the shard count: dropped records are planned too
  so.num_test_records = 37;
  so.height = 9;
  so.width = 7;
  so.channels = 3;
  so.num_classes = 5;
  so.image_format = "png";
  return so;
}

TEST(RankGroup, EveryRankCountGivesTheOneProcessBytes) {
  TempDir t;
  SyntheticSource one(small_synthetic());
  ConvertOptions base = options_for(t / "one", 2, 3, 11);
  base.quiet = true;
  base.sync = false;
  const ConvertResult single = run_conversion(one, base);
  const auto want = folder_bytes(t / "one");
  ASSERT_EQ(want.size(), 2u * 6 + 2);  // two splits of 6 shards, labels.txt, manifest.json

  for (int n : {1, 2, 3, 4}) {
    SCOPED_TRACE(str(n, " ranks"));
    const std::string out = t / str("ranks", n);
    ThreadRanks job(n);
    std::vector<uint64_t> written(static_cast<size_t>(n));
    const auto errors = job.run([&](ThreadRanks::Rank& rank) {
      SyntheticSource src(small_synthetic());
      ConvertOptions o = base;
      o.output = out;
      o.threads = 1;
      o.group = &rank;
      const ConvertResult r = run_conversion(src, o);
      written[static_cast<size_t>(rank.rank())] = r.records_written_here;
      EXPECT_EQ(r.rank, rank.rank());
      EXPECT_EQ(serialize_manifest(r.manifest), serialize_manifest(single.manifest));
    });
    for (const auto& e : errors) ASSERT_FALSE(e) << what(e);
    EXPECT_EQ(folder_bytes(out), want);
    // Shards are dealt round robin: no rank writes more than one shard's worth above another.
    uint64_t lo = UINT64_MAX, hi = 0, total = 0;
    for (uint64_t w : written) lo = std::min(lo, w), hi = std::max(hi, w), total += w;
    uint64_t records = 0, largest_shard = 0;
    for (const SplitInfo& s : single.manifest.splits) {
      records += s.num_records;
      for (const ShardInfo& sh : s.shards) largest_shard = std::max(largest_shard, sh.records);
    }
    EXPECT_EQ(total, records);
    EXPECT_LE(hi - lo, largest_shard);
  }
}

// Runs make_source() + run_conversion on 1, 2 and 3 ranks: every output equal to one process's.
template <typename MakeSource>
void expect_rank_counts_agree(const TempDir& t, const std::string& name, ConvertOptions base, MakeSource make_source) {
  base.quiet = true;
  base.sync = false;
  base.output = t / (name + "1");
  {
    auto one = make_source();
    run_conversion(*one, base);
  }
  const auto want = folder_bytes(base.output);
  for (int n : {2, 3}) {
    SCOPED_TRACE(str(name, ", ", n, " ranks"));
    ThreadRanks job(n);
    const std::string out = t / str(name, n);
    const auto errors = job.run([&](ThreadRanks::Rank& rank) {
      auto src = make_source();
      ConvertOptions o = base;
      o.output = out;
      o.threads = 1;
      o.group = &rank;
      run_conversion(*src, o);
    });
    for (const auto& e : errors) ASSERT_FALSE(e) << what(e);
    EXPECT_EQ(folder_bytes(out), want);
  }
}

// base64-TSV and TFRecord inputs are indexed file by file over the ranks.
TEST(RankGroup, SpreadScansOfTsvAndTFRecordFilesGiveTheOneProcessBytes) {
  TempDir t;
  std::vector<std::string> tsv;
  for (int f = 0; f < 3; ++f) {
    std::string text;
    for (int i = 0; i < 9; ++i) {
      std::vector<uint8_t> px(6 * 5 * 3);
      for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<uint8_t>(f * 31 + i * 7 + k);
      text += str(base64_encode(encode_png(px.data(), 6, 5, 3)), "\t", (f + i) % 4, "\n");
    }
    text += f == 1 ? "not base64!\t2\n\n" : "";  // a bad line (skipped) and a blank one
    tsv.push_back(t / str("part", f, ".tsv"));
    write_file(tsv.back(), text);
  }
  ConvertOptions o = options_for("", 2, 2, 3);
  o.skip_bad = true;
  expect_rank_counts_agree(t, "tsv", o, [&] {
    Base64TsvOptions bo;
    bo.files = tsv;
    return std::make_unique<Base64TsvSource>(bo);
  });
  // The TSV conversion's shards as a TFRecord input: four files.
  expect_rank_counts_agree(t, "tfrecord", options_for("", 1, 3, 5), [&] {
    TFRecordSourceOptions to;
    to.patterns = {t / "tsv1/train-*.tfrecord"};
    to.split = "train";
    return std::make_unique<TFRecordSource>(to);
  });
}

TEST(RankGroup, OneRanksFailureIsReportedByRankZeroWithItsKind) {
  ThreadRanks job(3);
  const auto errors = job.run([](ThreadRanks::Rank& rank) {
    run_settled(rank, [&] {
      if (rank.rank() == 2) throw FormatError("sample 7 is not an image");
    });
  });
  ASSERT_TRUE(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), FormatError);
  EXPECT_EQ(what(errors[0]), "rank 2 of 3: sample 7 is not an image");
  for (int r : {1, 2}) EXPECT_THROW(std::rethrow_exception(errors[static_cast<size_t>(r)]), OtherRankFailed);
}

TEST(RankGroup, RankZerosOwnFailureKeepsItsMessage) {
  ThreadRanks job(2);
  const auto errors = job.run([](ThreadRanks::Rank& rank) {
    run_settled(rank, [&] {
      if (rank.rank() == 0) throw ConfigError("out already holds a finished output");
    });
  });
  EXPECT_THROW(std::rethrow_exception(errors[0]), ConfigError);
  EXPECT_EQ(what(errors[0]), "out already holds a finished output");
  EXPECT_THROW(std::rethrow_exception(errors[1]), OtherRankFailed);
}

TEST(RankGroup, TheSameFailureEverywhereIsSaidOnce) {
  ThreadRanks job(3);
  const auto errors = job.run([](ThreadRanks::Rank& rank) {
    run_settled(rank, [] { throw ConfigError("--alpha must be in (0, 1)"); });
  });
  EXPECT_THROW(std::rethrow_exception(errors[0]), ConfigError);
  EXPECT_EQ(what(errors[0]), "--alpha must be in (0, 1)");
}

// What a rank's check says against one process's: counts, errors, warnings, every shard's numbers and
// label counts, and the --report survey (sizes, channel sums, sample thumbnails).
void expect_same_report(const CheckReport& got, const CheckReport& want) {
  EXPECT_EQ(got.error_count(), want.error_count());
  EXPECT_EQ(got.warnings, want.warnings);
  EXPECT_EQ(got.not_checked, want.not_checked);
  EXPECT_EQ(got.records, want.records);
  EXPECT_EQ(got.bytes, want.bytes);
  EXPECT_EQ(got.survey.sizes, want.survey.sizes);
  EXPECT_EQ(got.survey.decoded, want.survey.decoded);
  ASSERT_EQ(got.survey.channel_stats.size(), want.survey.channel_stats.size());
  for (const auto& [channels, cs] : want.survey.channel_stats) {
    EXPECT_EQ(got.survey.channel_stats.at(channels).sum, cs.sum);
    EXPECT_EQ(got.survey.channel_stats.at(channels).sum_sq, cs.sum_sq);
    EXPECT_EQ(got.survey.channel_stats.at(channels).pixels, cs.pixels);
  }
  ASSERT_EQ(got.samples.size(), want.samples.size());
  for (const auto& [label, list] : want.samples) {
    ASSERT_EQ(got.samples.at(label).size(), list.size()) << label;
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ(got.samples.at(label)[i].shard, list[i].shard);
      EXPECT_EQ(got.samples.at(label)[i].record, list[i].record);
      EXPECT_EQ(got.samples.at(label)[i].thumbnail.pixels, list[i].thumbnail.pixels);
    }
  }
  ASSERT_EQ(got.splits.size(), want.splits.size());
  for (size_t i = 0; i < got.splits.size(); ++i) {
    EXPECT_EQ(got.splits[i].errors, want.splits[i].errors);
    EXPECT_EQ(got.splits[i].histogram, want.splits[i].histogram);
    EXPECT_EQ(got.splits[i].min_p_value, want.splits[i].min_p_value);
    ASSERT_EQ(got.splits[i].shards.size(), want.splits[i].shards.size());
    for (size_t k = 0; k < got.splits[i].shards.size(); ++k) {
      const ShardReport &a = got.splits[i].shards[k], &b = want.splits[i].shards[k];
      EXPECT_EQ(a.file, b.file);
      EXPECT_EQ(a.records, b.records);
      EXPECT_EQ(a.histogram, b.histogram);
      EXPECT_EQ(a.label_counts, b.label_counts);
      EXPECT_EQ(a.errors, b.errors);
    }
  }
}

TEST(RankGroup, CheckOverRanksGivesTheOneProcessReport) {
  TempDir t;
  SyntheticSource src(small_synthetic());
  ConvertOptions co = options_for(t / "set", 2, 3, 4);
  co.quiet = true;
  run_conversion(src, co);
  // A flipped byte in one shard: its errors must come back from whichever rank checked it.
  {
    std::string bytes = read_file(t / "set/train-00004-of-00006.tfrecord");
    bytes[bytes.size() / 2] ^= 0x40;
    write_file(t / "set/train-00004-of-00006.tfrecord", bytes);
  }
  CheckOptions o;
  o.dir = t / "set";
  o.quiet = true;
  o.decode = true;
  o.survey.enabled = true;  // --report: sizes, channel statistics and sample thumbnails travel too
  o.survey.samples_per_class = 3;
  const CheckReport want = check_shard_set(o);
  ASSERT_FALSE(want.ok());
  ASSERT_FALSE(want.samples.empty());
  for (int n : {2, 3}) {
    SCOPED_TRACE(str(n, " ranks"));
    ThreadRanks job(n);
    const auto errors = job.run([&](ThreadRanks::Rank& rank) {
      CheckOptions mine = o;
      mine.threads = 1;
      mine.group = &rank;
      expect_same_report(check_shard_set(mine), want);
    });
    for (const auto& e : errors) EXPECT_FALSE(e) << what(e);
  }
}

// Shards without a manifest (TF-slim's layout): with labels.txt, then without (label counts only).
TEST(RankGroup, PlainCheckOverRanksGivesTheOneProcessReport) {
  TempDir t;
  SyntheticSource src(small_synthetic());
  ConvertOptions co = options_for(t / "set", 2, 2, 4);
  co.quiet = true;
  run_conversion(src, co);
  fs::remove(t / "set/manifest.json");
  for (bool with_labels : {true, false}) {
    SCOPED_TRACE(with_labels ? "labels.txt" : "no labels.txt");
    if (!with_labels) fs::remove(t / "set/labels.txt");
    CheckOptions o;
    o.dir = t / "set";
    o.quiet = true;
    const CheckReport want = check_shard_set(o);
    ASSERT_FALSE(want.has_manifest);
    ThreadRanks job(3);
    const auto errors = job.run([&](ThreadRanks::Rank& rank) {
      CheckOptions mine = o;
      mine.threads = 1;
      mine.group = &rank;
      expect_same_report(check_shard_set(mine), want);
    });
    for (const auto& e : errors) EXPECT_FALSE(e) << what(e);
  }
}

TEST(RankGroup, NoFailureReturnsEverywhere) {
  ThreadRanks job(3);
  for (const auto& e : job.run([](ThreadRanks::Rank& rank) { run_settled(rank, [] {}); })) EXPECT_FALSE(e);
}

TEST(RankGroup, RanksThatSeeDifferentInputsAreRefused) {
  TempDir t;
  ThreadRanks job(2);
  const auto errors = job.run([&](ThreadRanks::Rank& rank) {
    SyntheticOptions so = small_synthetic();
    if (rank.rank() == 1) so.num_records += 1;  // as if rank 1 read another copy of the input
    SyntheticSource src(so);
    ConvertOptions o = options_for(t / "out", 1, 2);
    o.quiet = true;
    o.group = &rank;
    run_conversion(src, o);
  });
  ASSERT_TRUE(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), ConfigError);
  EXPECT_NE(what(errors[0]).find("rank 1 of 2: rank 1 planned other shards than rank 0"), std::string::npos)
      << what(errors[0]);
  EXPECT_TRUE(visible_names(t / "out").empty());
  EXPECT_TRUE(names_except_lock(t / "out").empty());
}

TEST(RankGroup, OutcomesTravelIntact) {
  ShardOutcome a, b;
  a.records = 12;
  a.file_bytes = 3456;
  a.image.add(RecordInfo{"png", 28, 28, 1});
  b.records = 0;  // an empty shard: no image seen
  const std::string mine = encode_outcomes({2, 0, 1}, {a, b, b});
  ThreadRanks job(1);
  const auto errors = job.run([&](ThreadRanks::Rank& rank) {
    const std::vector<ShardOutcome> all = gather_outcomes(rank, mine, 3);
    EXPECT_EQ(all.size(), 3u);
    EXPECT_EQ(all[2].records, 12u);
    EXPECT_EQ(all[2].file_bytes, 3456u);
    EXPECT_TRUE(all[2].image.any);
    EXPECT_EQ(all[2].image.format, "png");
    EXPECT_EQ(all[2].image.height, 28);
    EXPECT_FALSE(all[0].image.any);
    EXPECT_EQ(all[0].image.format, "");
    EXPECT_THROW(gather_outcomes(rank, encode_outcomes({0}, {a}), 3), Error);  // jobs 1 and 2 unwritten
  });
  EXPECT_FALSE(errors[0]) << what(errors[0]);
}

}  // namespace
}  // namespace fastnn::converters
