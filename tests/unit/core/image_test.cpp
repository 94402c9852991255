// Format detection, limits, corrupt and hostile inputs, concurrency, and (optionally) real photos.
#include "core/image.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "tests/unit/core/image_test_util.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // our operator new is malloc
#endif

// Largest single operator-new request, to show that refused headers never size a buffer.
static std::atomic<size_t> g_largest_new{0};
void* operator new(size_t n) {
  size_t prev = g_largest_new.load(std::memory_order_relaxed);
  while (n > prev && !g_largest_new.compare_exchange_weak(prev, n)) {
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace fastnn {
namespace {

template <typename F>
std::string format_error_of(F&& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG EXCEPTION TYPE: ") + e.what();
  }
  return "NO EXCEPTION";
}
#define EXPECT_FORMAT_ERROR(expr, substring)                                        \
  do {                                                                              \
    const std::string what_ = format_error_of([&] { (void)(expr); });               \
    EXPECT_NE(what_.find(substring), std::string::npos) << #expr << " -> " << what_; \
  } while (0)

std::string small_jpeg(int c = 1) {
  const std::vector<uint8_t> px = testing::photo_like(16, 16, c, 11);
  return encode_jpeg(px.data(), 16, 16, c, 90);
}
std::string small_png(int w = 16, int h = 16) {
  const std::vector<uint8_t> px = testing::photo_like(w, h, 3, 12);
  return encode_png(px.data(), w, h, 3);
}

// Rewrites the baseline SOF0 frame size of a JPEG.
std::string patch_sof(std::string jpg, int width, int height) {
  const size_t p = jpg.find("\xff\xc0");
  EXPECT_NE(p, std::string::npos);
  jpg[p + 5] = static_cast<char>(height >> 8), jpg[p + 6] = static_cast<char>(height);
  jpg[p + 7] = static_cast<char>(width >> 8), jpg[p + 8] = static_cast<char>(width);
  return jpg;
}

// Rewrites the IHDR size of a PNG and fixes its CRC, so only the size is wrong.
std::string patch_ihdr(std::string png, uint32_t width, uint32_t height) {
  for (int i = 0; i < 4; ++i) {
    png[16 + i] = static_cast<char>(width >> (24 - 8 * i));
    png[20 + i] = static_cast<char>(height >> (24 - 8 * i));
  }
  const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17));
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<char>(crc >> (24 - 8 * i));
  return png;
}

TEST(image_format, DetectsByMagicBytes) {
  EXPECT_EQ(detect_image_format(small_jpeg()), ImageFormat::kJpeg);
  EXPECT_EQ(detect_image_format(small_png()), ImageFormat::kPng);
  EXPECT_EQ(detect_image_format(std::string("\xff\xd8\xff", 3)), ImageFormat::kJpeg);
  EXPECT_EQ(detect_image_format(std::string("\xff\xd8", 2)), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format(std::string("\x89PNG\r\n\x1a\n", 8)), ImageFormat::kPng);
  EXPECT_EQ(detect_image_format(std::string("\x89PNG\r\n\x1a", 7)), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format(std::string("\x89PNG\n\r\x1a\n", 8)), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format("GIF89a......"), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format(""), ImageFormat::kUnknown);
  EXPECT_STREQ(image_format_name(ImageFormat::kJpeg), "jpeg");
  EXPECT_STREQ(image_format_name(ImageFormat::kPng), "png");
  EXPECT_STREQ(image_format_name(ImageFormat::kUnknown), "unknown");
}

TEST(image_format, LimitsApplyToBothFormats) {
  for (const std::string& img : {small_jpeg(), small_png()}) {
    SCOPED_TRACE(image_format_name(detect_image_format(img)));
    ImageLimits exact;
    exact.max_pixels = 256;
    exact.max_side = 16;
    EXPECT_EQ(read_image_info(img, exact).width, 16);
    EXPECT_EQ(decode_image(img, 0, exact).height, 16);
    ImageLimits few;
    few.max_pixels = 255;
    EXPECT_FORMAT_ERROR(read_image_info(img, few), "exceeds the limit of 255 pixels");
    EXPECT_FORMAT_ERROR(decode_image(img, 0, few), "exceeds");
    std::vector<uint8_t> out(16 * 16 * 4);
    EXPECT_FORMAT_ERROR(decode_image_into(img, 4, out.data(), out.size(), few), "exceeds");
    ImageLimits narrow;
    narrow.max_side = 15;
    EXPECT_FORMAT_ERROR(read_image_info(img, narrow), "");
    EXPECT_FORMAT_ERROR(decode_image(img, 0, narrow), "");
  }
}

// 100000 does not fit SOF's 16-bit fields; 50000×50000 (2.5 gigapixels) is the same attack.
TEST(image_format, HugeHeadersAreRefusedWithoutAllocating) {
  const std::string jpeg = patch_sof(small_jpeg(), 50000, 50000);
  const std::string jpeg_max = patch_sof(small_jpeg(), 65535, 65535);  // over libjpeg's own 65500
  const std::string png_side = patch_ihdr(small_png(), 100000, 100000);
  const std::string png_area = patch_ihdr(small_png(), 20000, 20000);
  std::vector<uint8_t> small(64);
  g_largest_new = 0;
  EXPECT_FORMAT_ERROR(read_image_info(jpeg), "50000x50000 (2500000000 pixels) exceeds the limit");
  EXPECT_FORMAT_ERROR(decode_image(jpeg), "exceeds the limit");
  EXPECT_FORMAT_ERROR(decode_image_into(jpeg, 3, small.data(), small.size()), "exceeds the limit");
  EXPECT_FORMAT_ERROR(decode_jpeg_scaled_into(jpeg, {1, 8}, 3, small.data(), small.size()), "exceeds");
  EXPECT_FORMAT_ERROR(read_image_info(jpeg_max), "JPEG header");
  EXPECT_FORMAT_ERROR(decode_image(jpeg_max), "JPEG header");
  EXPECT_FORMAT_ERROR(read_image_info(png_side), "exceeds user limit");
  EXPECT_FORMAT_ERROR(decode_image(png_side), "PNG header");
  EXPECT_FORMAT_ERROR(read_image_info(png_area), "20000x20000 (400000000 pixels) exceeds the limit");
  EXPECT_FORMAT_ERROR(decode_image_into(png_area, 3, small.data(), small.size()), "exceeds the limit");
  EXPECT_LT(g_largest_new.load(), size_t{1} << 20);
}

TEST(image_format, EmptyAndRandomInputsAreFormatErrors) {
  std::vector<uint8_t> out(1024);
  EXPECT_FORMAT_ERROR(read_image_info(""), "empty");
  EXPECT_FORMAT_ERROR(decode_image(""), "empty");
  EXPECT_FORMAT_ERROR(decode_image_into("", 0, out.data(), out.size()), "empty");
  EXPECT_FORMAT_ERROR(decode_jpeg_scaled_into("", {1, 1}, 0, out.data(), out.size()), "not a JPEG");
  EXPECT_FORMAT_ERROR(decode_jpeg_scaled_into(small_png(), {1, 1}, 0, out.data(), out.size()), "not a JPEG");
  const std::string jpeg_magic("\xff\xd8\xff", 3), png_magic = small_png().substr(0, 8);
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::vector<uint8_t> r = testing::random_bytes(seed * 7, seed);
    const std::string bytes(r.begin(), r.end());
    EXPECT_FORMAT_ERROR(read_image_info(bytes), "");
    EXPECT_FORMAT_ERROR(decode_image(jpeg_magic + bytes), "");
    EXPECT_FORMAT_ERROR(decode_image(png_magic + bytes), "");
  }
}

TEST(image_format, TruncatedJpegIsAnErrorNotGrayPadding) {
  for (int c : {1, 3}) {
    const std::vector<uint8_t> px = testing::photo_like(64, 48, c, 13);
    const std::string jpg = encode_jpeg(px.data(), 64, 48, c, 90);
    const std::string half = jpg.substr(0, jpg.size() / 2);
    EXPECT_EQ(read_image_info(half).width, 64);  // the header is intact; the data is not
    EXPECT_FORMAT_ERROR(decode_image(half), "libjpeg warning, treated as an error");
    EXPECT_FORMAT_ERROR(decode_image(jpg.substr(0, jpg.size() - 2)), "");  // only EOI missing
    EXPECT_FORMAT_ERROR(decode_image(jpg.substr(0, 40)), "JPEG header");
    EXPECT_FORMAT_ERROR(read_image_info(jpg.substr(0, 3)), "JPEG header");
    EXPECT_EQ(decode_image(jpg).width, 64);
  }
}

TEST(image_format, CorruptPngIsAFormatError) {
  const std::string png = small_png(24, 20);
  ASSERT_EQ(decode_image(png).width, 24);
  std::string bad_ihdr_crc = png;
  bad_ihdr_crc[30] ^= 0x10;
  EXPECT_FORMAT_ERROR(read_image_info(bad_ihdr_crc), "CRC");
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  const size_t idat_len = (static_cast<uint8_t>(png[idat - 4]) << 24) | (static_cast<uint8_t>(png[idat - 3]) << 16) |
                          (static_cast<uint8_t>(png[idat - 2]) << 8) | static_cast<uint8_t>(png[idat - 1]);
  std::string bad_idat_crc = png;
  bad_idat_crc[idat + 4 + idat_len] ^= 0x01;  // data intact, CRC wrong
  EXPECT_EQ(read_image_info(bad_idat_crc).width, 24);
  EXPECT_FORMAT_ERROR(decode_image(bad_idat_crc), "IDAT: CRC error");
  std::string bad_idat_data = png;
  bad_idat_data[idat + 10] ^= 0x01;  // zlib notices before the chunk's CRC is checked
  EXPECT_FORMAT_ERROR(decode_image(bad_idat_data), "IDAT");
  EXPECT_FORMAT_ERROR(decode_image(png.substr(0, png.size() / 2)), "truncated");
  EXPECT_FORMAT_ERROR(decode_image(png.substr(0, png.size() - 12)), "truncated");  // IEND missing
  EXPECT_FORMAT_ERROR(read_image_info(png.substr(0, 20)), "truncated");
}

TEST(image_format, ConcurrentDecodesAndEncodesAgree) {
  const std::vector<uint8_t> px = testing::photo_like(48, 32, 3, 14);
  const std::string jpg = encode_jpeg(px.data(), 48, 32, 3, 90), png = encode_png(px.data(), 48, 32, 3);
  const std::vector<uint8_t> ref = decode_image(jpg).pixels;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        if (decode_image(jpg).pixels != ref) ++mismatches;
        if (decode_image(png).pixels != px) ++mismatches;
        if (encode_jpeg(px.data(), 48, 32, 3, 90) != jpg) ++mismatches;
        if (format_error_of([&] { decode_image(jpg.substr(0, 300)); }).find("JPEG") == std::string::npos)
          ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Real photographs: sklearn's china.jpg and flower.jpg (640×427), which scripts/setup.sh unpacks from
// Debian's python3-sklearn package into /var/cache/fastnn/sample-images (or FASTNN_SAMPLE_IMAGES).
TEST(image_samples, RealPhotographsDecode) {
  const char* env = std::getenv("FASTNN_SAMPLE_IMAGES");
  const std::string dir = env ? env : "/var/cache/fastnn/sample-images";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " missing (scripts/setup.sh fetches it)";
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".jpg" && ext != ".jpeg" && ext != ".png") continue;
    SCOPED_TRACE(e.path().string());
    std::ifstream in(e.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const ImageInfo info = read_image_info(bytes);
    const Image img = decode_image(bytes, 3);
    ASSERT_EQ(img.pixels.size(), static_cast<size_t>(info.width) * info.height * 3);
    double mean[3] = {0, 0, 0};
    for (size_t i = 0; i < img.pixels.size(); ++i) mean[i % 3] += img.pixels[i];
    for (double& m : mean) m /= static_cast<double>(info.width) * info.height;
    std::printf("[ sample   ] %s: %s %dx%d, %d channels stored, mean RGB %.1f %.1f %.1f\n",
                e.path().filename().c_str(), image_format_name(info.format), info.width, info.height, info.channels,
                mean[0], mean[1], mean[2]);
    if (info.format == ImageFormat::kJpeg) {
      const JpegScale s{1, 4};
      const int sw = jpeg_scaled_dim(info.width, s), sh = jpeg_scaled_dim(info.height, s);
      std::vector<uint8_t> quarter(static_cast<size_t>(sw) * sh * 3);
      decode_jpeg_scaled_into(bytes, s, 3, quarter.data(), quarter.size());
      const double err = testing::mean_abs_diff(testing::crop(quarter, sw, 3, info.width / 4, info.height / 4),
                                                testing::box_downscale(img.pixels, info.width, info.height, 3, 4));
      std::printf("[ sample   ]   1/4 scaled decode %dx%d vs 4x4 box of the full decode: mean abs diff %.2f\n", sw,
                  sh, err);
      EXPECT_LT(err, 4.0);
    }
    const Image again = decode_image(encode_jpeg(img.pixels.data(), img.width, img.height, 3, 95));
    EXPECT_LT(testing::mean_abs_diff(again.pixels, img.pixels), 3.0);
    ++seen;
  }
  if (seen == 0) GTEST_SKIP() << "no .jpg/.png files in " << dir;
}

}  // namespace
}  // namespace fastnn
