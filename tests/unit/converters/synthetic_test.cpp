// Synthetic data: the records hold exactly synthetic_pixels() (png, raw) with label id mod classes,
// and the output bytes do not depend on the thread count.
#include "converters/synthetic.h"

#include <gtest/gtest.h>

#include <map>

#include "convert_test_util.h"

namespace fastnn::converters {
namespace {

using namespace testing;

ConvertResult convert_synthetic(SyntheticOptions so, const ConvertOptions& o) {
  SyntheticSource src(so);
  return run_conversion(src, o);
}

TEST(Synthetic, RecordsHoldTheGeneratedImages) {
  TempDir t;
  for (const char* format : {"png", "raw", "jpeg"}) {
    SyntheticOptions so;
    so.num_records = 40;
    so.num_test_records = 9;
    so.height = 12;
    so.width = 10;
    so.channels = 3;
    so.num_classes = 4;
    so.image_format = format;
    std::string out = t / format;
    ConvertResult r = convert_synthetic(so, options_for(out, 2, 2));
    EXPECT_EQ(r.manifest.image.format, format);
    // Every generated image, keyed by its pixels, with its id's label.
    std::map<std::string, int> want[2];
    for (uint32_t split = 0; split < 2; ++split)
      for (uint64_t i = 0; i < (split ? 9u : 40u); ++i) {
        std::string px(12 * 10 * 3, '\0');
        synthetic_pixels(split, i, static_cast<int32_t>(i % 4), 12, 10, 3, reinterpret_cast<uint8_t*>(px.data()));
        want[split][px] = static_cast<int>(i % 4);
      }
    for (uint32_t split = 0; split < 2; ++split) {
      std::vector<Record> recs = read_split(out, r.manifest, split ? "test" : "train");
      EXPECT_EQ(recs.size(), split ? 9u : 40u);
      std::set<std::string> seen;
      for (const Record& rec : recs) {
        EXPECT_EQ(rec.format, format);
        EXPECT_EQ(rec.height, 12);
        EXPECT_EQ(rec.width, 10);
        std::string px = rec.format == std::string("raw") ? rec.encoded : [&] {
          Image img = decode_image(rec.encoded);
          return std::string(img.pixels.begin(), img.pixels.end());
        }();
        if (std::string(format) == "jpeg") continue;  // lossy: checked by decoding only
        auto it = want[split].find(px);
        ASSERT_NE(it, want[split].end());
        EXPECT_EQ(rec.label, it->second);
        EXPECT_TRUE(seen.insert(px).second);
      }
    }
  }
}

TEST(Synthetic, ThreadCountDoesNotChangeBytes) {
  TempDir t;
  SyntheticOptions so;
  so.num_records = 333;
  so.height = so.width = 16;
  so.num_classes = 7;
  ConvertOptions o = options_for(t / "a", 1, 3, 42);
  o.threads = 1;
  o.stratify = true;
  o.remainder = Remainder::kPad;
  convert_synthetic(so, o);
  o.output = t / "b";
  o.threads = 5;
  convert_synthetic(so, o);
  EXPECT_EQ(all_files(t / "a"), all_files(t / "b"));
}

TEST(Synthetic, RejectsBadOptions) {
  SyntheticOptions so;
  so.image_format = "gif";
  EXPECT_THROW(SyntheticSource{so}, ConfigError);
  so = {};
  so.channels = 4;  // JPEG has no alpha
  EXPECT_THROW(SyntheticSource{so}, ConfigError);
  so = {};
  so.height = 0;
  EXPECT_THROW(SyntheticSource{so}, ConfigError);
}

}  // namespace
}  // namespace fastnn::converters
