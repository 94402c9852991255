// converters/image_example: the one-pass Example writer produces exactly ExampleBuilder's bytes
// (differential, over sizes that cross every varint length), the scan-time image check accepts whole
// images and rejects cut ones, and the record maker passes bytes through untouched.
#include "converters/image_example.h"

#include <gtest/gtest.h>

#include <random>

#include "core/check.h"
#include "core/example.h"
#include "core/image.h"

namespace fastnn::converters {
namespace {

std::string reference(std::string_view enc, const char* fmt, int h, int w, int c, int64_t label, int64_t coarse) {
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, enc);
  b.add_bytes(keys::kImageFormat, fmt);
  b.add_int64(keys::kLabel, label);
  if (coarse >= 0) b.add_int64(keys::kCoarseLabel, coarse);
  b.add_int64(keys::kHeight, h);
  b.add_int64(keys::kWidth, w);
  b.add_int64(keys::kChannels, c);
  return b.serialize();
}

TEST(ImageExample, SameBytesAsExampleBuilder) {
  std::mt19937 rng(3);
  std::string out;
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{127}, size_t{128}, size_t{16383}, size_t{16384},
                   size_t{70000}, size_t{2100000}}) {
    std::string enc(n, '\0');
    for (char& ch : enc) ch = static_cast<char>(rng());
    for (int64_t label : {int64_t{0}, int64_t{9}, int64_t{127}, int64_t{128}, int64_t{99999}, int64_t{1} << 40})
      for (int64_t coarse : {int64_t{-1}, int64_t{0}, int64_t{19}}) {
        serialize_image_example(enc, "jpeg", 480, 640, 3, label, coarse, &out);
        ASSERT_EQ(out, reference(enc, "jpeg", 480, 640, 3, label, coarse)) << n << " " << label << " " << coarse;
      }
  }
  // And the parser reads it back.
  serialize_image_example("abc", "png", 28, 27, 1, 5, 2, &out);
  ExampleParser p({keys::kImageEncoded, keys::kImageFormat, keys::kLabel, keys::kCoarseLabel, keys::kHeight,
                   keys::kWidth, keys::kChannels});
  FeatureView f[7];
  p.parse(out, f);
  EXPECT_EQ(f[0].single_bytes("e"), "abc");
  EXPECT_EQ(f[1].single_bytes("f"), "png");
  EXPECT_EQ(f[2].single_int64("l"), 5);
  EXPECT_EQ(f[3].single_int64("c"), 2);
  EXPECT_EQ(f[4].single_int64("h"), 28);
  EXPECT_EQ(f[5].single_int64("w"), 27);
  EXPECT_EQ(f[6].single_int64("c"), 1);
}

std::vector<uint8_t> pixels(int w, int h, int c) {
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * c);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  return v;
}

TEST(ImageExample, CheckEncodedImage) {
  auto px = pixels(120, 90, 3);
  for (std::string img : {encode_jpeg(px.data(), 120, 90, 3, 90), encode_png(px.data(), 120, 90, 3)}) {
    std::string_view v(img);
    std::string_view tail = v.substr(v.size() - std::min(v.size(), kImageTailBytes));
    ImageInfo info = check_encoded_image(v, tail, v.size());
    EXPECT_EQ(info.width, 120);
    EXPECT_EQ(info.height, 90);
    // Trailing bytes after the end marker are tolerated.
    std::string padded = img + std::string(100, '\0');
    std::string_view pv(padded);
    EXPECT_NO_THROW(check_encoded_image(pv, pv.substr(pv.size() - std::min(pv.size(), kImageTailBytes)), pv.size()));
    // Cut in half: the end marker is gone.
    std::string_view half = v.substr(0, v.size() / 2);
    try {
      check_encoded_image(half, half.substr(half.size() - std::min(half.size(), kImageTailBytes)), half.size());
      ADD_FAILURE() << "accepted half an image";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(check_encoded_image("GIF89a....", "", 10), FormatError);
}

TEST(ImageExample, RecordMakerPassesBytesThrough) {
  auto px = pixels(64, 48, 1);
  std::string jpg = encode_jpeg(px.data(), 64, 48, 1, 85);
  ImageRecordMaker maker({});
  std::string rec;
  RecordInfo info;
  maker.make(jpg, 3, &rec, &info);
  EXPECT_EQ(rec, reference(jpg, "jpeg", 48, 64, 1, 3, -1));
  EXPECT_STREQ(info.format, "jpeg");
  EXPECT_EQ(info.channels, 1);
  // Shrinking: a gray JPEG stays gray; the shorter side becomes the target.
  ImageRecordOptions o;
  o.resize_shorter_side = 24;
  ImageRecordMaker small(o);
  small.make(jpg, 3, &rec, &info);
  EXPECT_EQ(info.height, 24);
  EXPECT_EQ(info.width, 32);
  EXPECT_EQ(info.channels, 1);
  EXPECT_THROW(maker.make("not an image", 0, &rec, &info), FormatError);
}

}  // namespace
}  // namespace fastnn::converters
