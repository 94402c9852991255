// JPEG through TurboJPEG: round trips, channel conversions, DCT-scaled decode against a box
// downscale of the full decode, CMYK, progressive, unusual sampling factors, handle reuse.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/image.h"
#include "tests/unit/core/image_test_util.h"

namespace fastnn {
namespace {

using testing::mean_abs_diff;

std::string tj_compress(const std::vector<uint8_t>& px, int w, int h, int pixel_format, int subsamp, int quality,
                        int flags) {
  tjhandle t = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(t, px.data(), w, 0, h, pixel_format, &buf, &size, subsamp, quality, flags);
  std::string out = rc == 0 ? std::string(reinterpret_cast<char*>(buf), size) : std::string();
  tjFree(buf);
  tjDestroy(t);
  return out;
}

TEST(image_jpeg, RoundTripRgbAndGrayWithinTolerance) {
  const int w = 64, h = 48;
  for (int c : {3, 1}) {
    SCOPED_TRACE("channels " + std::to_string(c));
    const std::vector<uint8_t> px = testing::photo_like(w, h, c);
    const std::string q95 = encode_jpeg(px.data(), w, h, c, 95);
    const std::string q30 = encode_jpeg(px.data(), w, h, c, 30);
    ASSERT_EQ(detect_image_format(q95), ImageFormat::kJpeg);
    const ImageInfo info = read_image_info(q95);
    EXPECT_EQ(info.format, ImageFormat::kJpeg);
    EXPECT_EQ(info.width, w);
    EXPECT_EQ(info.height, h);
    EXPECT_EQ(info.channels, c);
    const Image img = decode_image(q95);
    ASSERT_EQ(img.channels, c);
    const double err95 = mean_abs_diff(img.pixels, px), err30 = mean_abs_diff(decode_image(q30).pixels, px);
    EXPECT_LT(err95, 2.0) << "q30: " << err30;
    EXPECT_GT(err30, err95);  // quality is passed through
    EXPECT_LT(q95.size(), px.size());
  }
}

TEST(image_jpeg, DesiredChannels) {
  const int w = 40, h = 24;
  const std::vector<uint8_t> rgb = testing::photo_like(w, h, 3, 2);
  const std::string color = encode_jpeg(rgb.data(), w, h, 3, 92);
  const std::vector<uint8_t> c3 = decode_image(color, 3).pixels;
  const std::vector<uint8_t> c4 = decode_image(color, 4).pixels;
  const std::vector<uint8_t> c1 = decode_image(color, 1).pixels;
  ASSERT_EQ(c4.size(), c3.size() / 3 * 4);
  std::vector<uint8_t> gray_of_c3, rgb_of_c4;
  for (size_t i = 0; i < c3.size() / 3; ++i) {
    EXPECT_EQ(c4[4 * i + 3], 255);
    rgb_of_c4.insert(rgb_of_c4.end(), {c4[4 * i], c4[4 * i + 1], c4[4 * i + 2]});
    gray_of_c3.push_back(testing::luma(c3[3 * i], c3[3 * i + 1], c3[3 * i + 2]));
  }
  EXPECT_EQ(rgb_of_c4, c3);
  // Gray output is the decoded Y plane; BT.601 of the decoded RGB differs only by rounding and
  // chroma upsampling.
  EXPECT_LT(mean_abs_diff(c1, gray_of_c3), 0.5);

  const std::vector<uint8_t> g = testing::photo_like(w, h, 1, 3);
  const std::string gray = encode_jpeg(g.data(), w, h, 1, 92);
  const std::vector<uint8_t> g1 = decode_image(gray, 1).pixels, g3 = decode_image(gray, 3).pixels;
  const std::vector<uint8_t> g4 = decode_image(gray, 4).pixels;
  for (size_t i = 0; i < g1.size(); ++i) {
    ASSERT_EQ(g3[3 * i], g1[i]);
    ASSERT_EQ(g3[3 * i + 1], g1[i]);
    ASSERT_EQ(g3[3 * i + 2], g1[i]);
    ASSERT_EQ(g4[4 * i + 1], g1[i]);
    ASSERT_EQ(g4[4 * i + 3], 255);
  }
}

TEST(image_jpeg, ScaleArithmeticAndChoice) {
  EXPECT_EQ(jpeg_scaled_dim(203, {1, 2}), 102);
  EXPECT_EQ(jpeg_scaled_dim(150, {1, 4}), 38);
  EXPECT_EQ(jpeg_scaled_dim(7, {1, 8}), 1);
  EXPECT_EQ(jpeg_scaled_dim(203, {3, 4}), 153);
  EXPECT_EQ(jpeg_scaled_dim(0, {1, 8}), 0);
  auto is = [](JpegScale s, int num, int denom) { return s.num == num && s.denom == denom; };
  EXPECT_TRUE(is(choose_jpeg_scale(640, 480, 224, 224), 1, 2));    // 3/8 would give 240x180
  EXPECT_TRUE(is(choose_jpeg_scale(640, 480, 100, 100), 1, 4));    // 160x120; 1/8 is 80x60
  EXPECT_TRUE(is(choose_jpeg_scale(640, 480, 0, 0), 1, 8));
  EXPECT_TRUE(is(choose_jpeg_scale(1000, 1000, 600, 600), 5, 8));  // 625; 1/2 is 500
  EXPECT_TRUE(is(choose_jpeg_scale(100, 100, 200, 200), 1, 1));    // never upscales
  EXPECT_TRUE(is(choose_jpeg_scale(640, 480, 640, 480), 1, 1));
}

TEST(image_jpeg, ScaledDecodeHasDocumentedSizeAndApproximatesBoxDownscale) {
  const int w = 203, h = 150;
  const std::vector<uint8_t> px = testing::photo_like(w, h, 3, 4, 3);
  const std::string jpg = encode_jpeg(px.data(), w, h, 3, 95);
  const Image full = decode_image(jpg, 3);
  const struct {
    int denom, sw, sh;
  } want[] = {{2, 102, 75}, {4, 51, 38}, {8, 26, 19}};
  for (const auto& c : want) {
    SCOPED_TRACE("1/" + std::to_string(c.denom));
    const JpegScale s{1, c.denom};
    std::vector<uint8_t> out(static_cast<size_t>(c.sw) * c.sh * 3);
    const ImageInfo info = decode_jpeg_scaled_into(jpg, s, 3, out.data(), out.size());
    EXPECT_EQ(info.width, c.sw);
    EXPECT_EQ(info.height, c.sh);
    EXPECT_EQ(info.channels, 3);
    const int bw = w / c.denom, bh = h / c.denom;
    const double err = mean_abs_diff(testing::crop(out, c.sw, 3, bw, bh),
                                     testing::box_downscale(full.pixels, w, h, 3, c.denom));
    EXPECT_LT(err, 1.5);
    EXPECT_THROW(decode_jpeg_scaled_into(jpg, s, 3, out.data(), out.size() - 1), Error);
  }
  std::vector<uint8_t> out(static_cast<size_t>(153) * 113);
  EXPECT_EQ(decode_jpeg_scaled_into(jpg, {3, 4}, 1, out.data(), out.size()).height, 113);
  EXPECT_NO_THROW(decode_jpeg_scaled_into(jpg, {2, 4}, 1, out.data(), out.size()));  // = 1/2
  EXPECT_THROW(decode_jpeg_scaled_into(jpg, {1, 3}, 1, out.data(), out.size()), Error);
  EXPECT_THROW(decode_jpeg_scaled_into(jpg, {0, 1}, 1, out.data(), out.size()), Error);
}

// TurboJPEG writes CMYK as YCCK with an Adobe marker; we convert to RGB as R = C·K/255 (etc.).
TEST(image_jpeg, CmykIsConvertedToRgb) {
  const int w = 24, h = 16;
  std::vector<uint8_t> cmyk;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      cmyk.insert(cmyk.end(), {static_cast<uint8_t>(40 + 8 * x), static_cast<uint8_t>(200 - 6 * y),
                               static_cast<uint8_t>(128 + 3 * x - 2 * y), static_cast<uint8_t>(255 - 4 * y)});
  const std::string jpg = tj_compress(cmyk, w, h, TJPF_CMYK, TJSAMP_444, 100, TJFLAG_ACCURATEDCT);
  ASSERT_FALSE(jpg.empty());
  const ImageInfo info = read_image_info(jpg);
  EXPECT_EQ(info.channels, 3);
  std::vector<uint8_t> want;
  for (size_t i = 0; i < cmyk.size(); i += 4)
    for (int k = 0; k < 3; ++k) want.push_back(static_cast<uint8_t>((cmyk[i + k] * cmyk[i + 3] + 127) / 255));
  const Image rgb = decode_image(jpg);
  ASSERT_EQ(rgb.channels, 3);
  EXPECT_LT(mean_abs_diff(rgb.pixels, want), 1.0);
  const std::vector<uint8_t> rgba = decode_image(jpg, 4).pixels, gray = decode_image(jpg, 1).pixels;
  for (size_t i = 0; i < gray.size(); ++i) {
    ASSERT_EQ(rgba[4 * i], rgb.pixels[3 * i]);
    ASSERT_EQ(rgba[4 * i + 2], rgb.pixels[3 * i + 2]);
    ASSERT_EQ(rgba[4 * i + 3], 255);
    ASSERT_EQ(gray[i], testing::luma(rgb.pixels[3 * i], rgb.pixels[3 * i + 1], rgb.pixels[3 * i + 2]));
  }
  std::vector<uint8_t> half(static_cast<size_t>(12) * 8 * 3);
  EXPECT_EQ(decode_jpeg_scaled_into(jpg, {1, 2}, 3, half.data(), half.size()).width, 12);
}

// Progressive coding is lossless over the same quantised coefficients: identical pixels.
TEST(image_jpeg, ProgressiveDecodesLikeBaseline) {
  const int w = 48, h = 40;
  const std::vector<uint8_t> px = testing::photo_like(w, h, 3, 5);
  const std::string base = tj_compress(px, w, h, TJPF_RGB, TJSAMP_420, 85, TJFLAG_ACCURATEDCT);
  const std::string prog = tj_compress(px, w, h, TJPF_RGB, TJSAMP_420, 85, TJFLAG_ACCURATEDCT | TJFLAG_PROGRESSIVE);
  ASSERT_NE(base, prog);
  EXPECT_EQ(decode_image(prog).pixels, decode_image(base).pixels);
  EXPECT_THROW(decode_image(prog.substr(0, prog.size() * 2 / 3)), FormatError);
}

// Luma sampled 4x2, chroma 1x1: outside TurboJPEG 2.1's TJSAMP_* list, which makes
// tjDecompressHeader3 fail although the image decodes (libjpeg generated; pattern R = 5x, G = 7y,
// B = 128).
TEST(image_jpeg, UnusualSamplingFactorsDecode) {
  std::ifstream in(FASTNN_SOURCE_DIR "/tests/fuzz/corpus/fuzz_image_decode/jpeg_410.jpg", std::ios::binary);
  const std::string jpg{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_FALSE(jpg.empty());
  const Image img = decode_image(jpg);
  ASSERT_EQ(img.width, 48);
  ASSERT_EQ(img.height, 32);
  ASSERT_EQ(img.channels, 3);
  std::vector<uint8_t> want;
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 48; ++x) want.insert(want.end(), {static_cast<uint8_t>(5 * x), static_cast<uint8_t>(7 * y), 128});
  EXPECT_LT(mean_abs_diff(img.pixels, want), 3.5);  // PIL (libjpeg-turbo too): 2.73
}

// Failures (header errors, libjpeg warnings) leave nothing behind: later calls decode normally.
TEST(image_jpeg, WorksAfterEveryKindOfFailure) {
  const std::vector<uint8_t> px = testing::photo_like(32, 32, 3, 6);
  const std::string good = encode_jpeg(px.data(), 32, 32, 3, 90);
  const std::vector<uint8_t> ref = decode_image(good).pixels;
  const std::string bad_header = std::string("\xff\xd8\xff\xe0\x00\x10JFIF", 10) + std::string(40, '\x01');
  const std::string truncated = good.substr(0, good.size() / 2);
  for (int round = 0; round < 3; ++round) {
    EXPECT_THROW(read_image_info(bad_header), FormatError);
    EXPECT_EQ(read_image_info(good).width, 32);
    EXPECT_THROW(decode_image(bad_header), FormatError);
    EXPECT_EQ(decode_image(good).pixels, ref);
    EXPECT_THROW(decode_image(truncated), FormatError);
    EXPECT_EQ(decode_image(good).pixels, ref);
  }
}

TEST(image_jpeg, EncoderRejectsBadArguments) {
  const std::vector<uint8_t> px(16 * 16 * 4, 7);
  EXPECT_THROW(encode_jpeg(px.data(), 16, 16, 4, 90), Error);
  EXPECT_THROW(encode_jpeg(px.data(), 16, 16, 3, 0), Error);
  EXPECT_THROW(encode_jpeg(px.data(), 16, 16, 3, 101), Error);
  EXPECT_THROW(encode_jpeg(nullptr, 16, 16, 3, 90), Error);
  EXPECT_THROW(encode_jpeg(px.data(), 0, 16, 3, 90), Error);
}

}  // namespace
}  // namespace fastnn
