// `fastnn check --report`'s survey (converters/image_survey.h) gathered by the check's own pass: the
// channel statistics equal those computed here from the synthetic source's pixels, sizes count every
// record, the samples are the first per class in (split, shard, record) order whatever the threads,
// the check's verdict and histograms do not change, a shard set without a manifest is surveyed too,
// and the page holds the sections and escapes class names.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>

#include "convert_test_util.h"
#include "converters/check_report_page.h"
#include "converters/image_survey.h"
#include "converters/shard_check.h"
#include "converters/synthetic.h"

namespace fastnn::converters {
namespace {

using namespace testing;

SyntheticOptions synthetic(const std::vector<std::string>& names = {}) {
  SyntheticOptions so;
  so.num_records = 400;
  so.num_test_records = 50;
  so.height = 6;
  so.width = 5;
  so.channels = 3;
  so.num_classes = 10;
  so.image_format = "png";
  so.class_names = names;
  return so;
}

CheckOptions survey_options(const std::string& dir, int threads, bool decode, uint64_t stats_records) {
  CheckOptions o;
  o.dir = dir;
  o.quiet = true;
  o.threads = threads;
  o.decode = decode;
  o.survey.enabled = true;
  o.survey.samples_per_class = 3;
  o.survey.stats_records = stats_records;
  return o;
}

TEST(MeasurePixels, SumsPerChannel) {
  const uint8_t px[] = {1, 2, 3, 10, 20, 30};  // two RGB pixels
  RecordFacts f;
  f.height = 1, f.width = 2, f.channels = 3;
  measure_pixels(px, 2, 3, &f);
  EXPECT_TRUE(f.measured);
  EXPECT_EQ(f.sum[0], 11u);
  EXPECT_EQ(f.sum_sq[2], 9u + 900u);
  ImageSurvey s;
  s.add(f);
  const ChannelStats& c = s.channel_stats.at(3);
  EXPECT_EQ(c.pixels, 2u);
  EXPECT_DOUBLE_EQ(c.mean(1), 11);
  EXPECT_DOUBLE_EQ(c.stddev(1), 9);  // values 2 and 20
  EXPECT_EQ(s.sizes.at({1, 2, 3}), 1u);
}

TEST(SampleTable, KeepsTheSmallestKeysWhateverTheOrder) {
  SurveyOptions so;
  so.samples_per_class = 2;
  so.max_sample_classes = 2;
  const uint8_t px[4] = {0, 64, 128, 255};
  RecordFacts f;
  f.height = 2, f.width = 2, f.channels = 1, f.format = "raw";
  f.encoded = std::string_view(reinterpret_cast<const char*>(px), 4);
  std::vector<SampleTable::Key> keys = {{0, 1, 5}, {0, 0, 9}, {1, 0, 0}, {0, 0, 3}, {0, 1, 0}};
  std::vector<std::vector<uint64_t>> got;
  for (int order = 0; order < 2; ++order) {
    SampleTable t(so);
    for (const auto& k : keys) t.offer(0, k, f, "train", "s");
    t.offer(2, {0, 0, 0}, f, "train", "s");  // label 2 >= max_sample_classes: not kept
    auto taken = t.take();
    ASSERT_EQ(taken.size(), 1u);
    std::vector<uint64_t> recs;
    for (const SampleImage& s : taken.at(0)) recs.push_back(s.record);
    got.push_back(recs);
    EXPECT_EQ(taken.at(0)[0].thumbnail.pixels, std::vector<uint8_t>(px, px + 4));
    std::reverse(keys.begin(), keys.end());
  }
  EXPECT_EQ(got[0], (std::vector<uint64_t>{3, 9}));  // keys (0,0,3) and (0,0,9)
  EXPECT_EQ(got[0], got[1]);
}

TEST(SampleTable, LargeImagesBecomeThumbnails) {
  SurveyOptions so;
  std::vector<uint8_t> px(100 * 128 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i / 3) % 128 < 64 ? 20 : 220);
  RecordFacts f;
  f.height = 100, f.width = 128, f.channels = 3, f.format = "raw";
  f.encoded = std::string_view(reinterpret_cast<const char*>(px.data()), px.size());
  SampleTable t(so);
  t.offer(0, {0, 0, 0}, f, "train", "s");
  const Image th = t.take().at(0).at(0).thumbnail;
  EXPECT_EQ(th.width, kThumbnailSide);
  EXPECT_EQ(th.height, 50);
  EXPECT_EQ(th.channels, 3);
  EXPECT_EQ(th.pixels[0], 20);                       // left half dark,
  EXPECT_EQ(th.pixels[(th.width - 1) * 3], 220);     // right half light (area average, no blur across)
  RecordFacts bad = f;
  bad.format = "png";  // not a PNG: skipped, not thrown (the check reports the record)
  SampleTable t2(so);
  t2.offer(0, {0, 0, 0}, bad, "train", "s");
  EXPECT_TRUE(t2.take().empty());
}

TEST(CheckSurvey, StatisticsEqualTheSourcePixelsAndSamplesDoNotDependOnThreads) {
  TempDir t;
  SyntheticSource src(synthetic());
  run_conversion(src, options_for(t / "s", 2, 2));

  // Expected: every record's pixels, straight from the synthetic source.
  const SyntheticOptions so = synthetic();
  double sum[3] = {}, sum_sq[3] = {};
  std::vector<uint8_t> px(6 * 5 * 3);
  for (uint32_t split = 0; split < 2; ++split)
    for (uint64_t i = 0; i < (split ? so.num_test_records : so.num_records); ++i) {
      synthetic_pixels(split, i, static_cast<int32_t>(i % 10), 6, 5, 3, px.data());
      for (size_t p = 0; p < px.size(); ++p) sum[p % 3] += px[p], sum_sq[p % 3] += double(px[p]) * px[p];
    }
  const double n = 450.0 * 30;

  CheckOptions plain;
  plain.dir = t / "s";
  plain.quiet = true;
  const CheckReport base = check_shard_set(plain);
  std::vector<std::vector<uint64_t>> sample_records;
  for (int threads : {1, 3}) {
    for (bool decode : {true, false}) {
      const CheckReport r = check_shard_set(survey_options(t / "s", threads, decode, decode ? 0 : 1000));
      ASSERT_TRUE(r.ok()) << r.error_count();
      EXPECT_TRUE(r.surveyed);
      EXPECT_EQ(r.splits[0].histogram, base.splits[0].histogram);
      EXPECT_EQ(r.splits[1].shards[3].histogram, base.splits[1].shards[3].histogram);
      EXPECT_EQ(r.survey.sizes, (std::map<std::tuple<int64_t, int64_t, int64_t>, uint64_t>{{{6, 5, 3}, 450}}));
      // Without --decode, 1000 records over 8 shards is at least every record here.
      EXPECT_EQ(r.measured_per_shard, decode ? UINT64_MAX : 125u);
      EXPECT_EQ(r.survey.decoded, 450u);
      const ChannelStats& c = r.survey.channel_stats.at(3);
      EXPECT_EQ(c.images, 450u);
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(c.mean(k), sum[k] / n, 1e-9) << k;
        EXPECT_NEAR(c.stddev(k), std::sqrt(sum_sq[k] / n - (sum[k] / n) * (sum[k] / n)), 1e-9) << k;
      }
      ASSERT_EQ(r.samples.size(), 10u);
      std::vector<uint64_t> recs;
      for (const auto& [label, list] : r.samples) {
        ASSERT_EQ(list.size(), 3u);
        for (const SampleImage& s : list) {
          EXPECT_EQ(s.split, "train");  // train comes first and holds every class
          EXPECT_EQ(s.label, label);
          EXPECT_EQ(s.thumbnail.width, 5);
          EXPECT_EQ(s.thumbnail.height, 6);
          recs.push_back(s.record);
        }
      }
      sample_records.push_back(recs);
    }
  }
  for (const auto& r : sample_records) EXPECT_EQ(r, sample_records[0]);

  // A sample: 8 records over 8 shards = the first record of each shard.
  const CheckReport few = check_shard_set(survey_options(t / "s", 2, false, 8));
  EXPECT_EQ(few.measured_per_shard, 1u);
  EXPECT_EQ(few.survey.decoded, 8u);
  EXPECT_EQ(few.survey.sizes.begin()->second, 450u);  // sizes still count every record

  // The same shards without manifest.json.
  std::filesystem::remove(t / "s/manifest.json");
  const CheckReport bare = check_shard_set(survey_options(t / "s", 2, true, 0));
  EXPECT_FALSE(bare.has_manifest);
  EXPECT_EQ(bare.survey.decoded, 450u);
  EXPECT_NEAR(bare.survey.channel_stats.at(3).mean(0), sum[0] / n, 1e-9);
  EXPECT_EQ(bare.samples.size(), 10u);
}

TEST(CheckReportPage, SectionsAndEscapedNames) {
  TempDir t;
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back(i == 3 ? "<script>x</script>&amp" : "c" + std::to_string(i));
  SyntheticSource src(synthetic(names));
  run_conversion(src, options_for(t / "s", 1, 2));
  const CheckOptions o = survey_options(t / "s", 2, false, 100);
  const std::string page = check_report_page(check_shard_set(o), o);
  for (const char* id : {"summary", "classes", "samples", "balance", "sizes", "channels", "problems"})
    EXPECT_NE(page.find(str("<section id=\"", id, "\">")), std::string::npos) << id;
  EXPECT_EQ(page.find("<script>x"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;x&lt;/script&gt;&amp;amp"), std::string::npos);
  EXPECT_NE(page.find("over a sample: the first 25 records of each shard, 100 of 450 records"), std::string::npos);
  size_t images = 0;
  for (size_t p = page.find("<img src=\"data:image/png;base64,"); p != std::string::npos;
       p = page.find("<img src=\"data:image/png;base64,", p + 1))
    ++images;
  EXPECT_EQ(images, 30u);
}

}  // namespace
}  // namespace fastnn::converters
