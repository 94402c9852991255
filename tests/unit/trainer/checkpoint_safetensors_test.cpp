// safetensors writer/reader: known-answer bytes from the format description, round trips of every
// dtype, and the F16/BF16 conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/check.h"
#include "core/half.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "core/safetensors.h"

namespace fastnn::checkpoint {
namespace {

using testing_util::ScratchDir;

using testing_util::le64;

// Two tensors by hand: a = F32 [1.0, -2.0] (00 00 80 3f, 00 00 00 c0), b = U8 [1, 2, 3].
const std::string kBuffer("\x00\x00\x80\x3f\x00\x00\x00\xc0\x01\x02\x03", 11);

TEST(CheckpointSafetensors, WriterMatchesHandAssembledBytes) {
  const float a[] = {1.0f, -2.0f};
  const uint8_t b[] = {1, 2, 3};
  const std::vector<ArrayView> arrays = {f32_view("a", {2}, a, 2), typed_view("b", DType::kU8, {3}, b, 3)};
  // Keys sorted (the writer's JSON object order), compact, padded with spaces to 136 = 17 x 8 bytes.
  const std::string json =
      R"({"__metadata__":{"k":"v"},"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},)"
      R"("b":{"data_offsets":[8,11],"dtype":"U8","shape":[3]}})";
  ASSERT_EQ(json.size(), 132u);
  const std::string expected = std::string("\x88\0\0\0\0\0\0\0", 8) + json + "    " + kBuffer;
  EXPECT_EQ(encode_safetensors(arrays, {{"k", "v"}}), expected);

  ScratchDir dir("st-kat");
  const auto r = write_safetensors(dir.file("x.safetensors"), arrays, {{"k", "v"}});
  EXPECT_EQ(testing_util::read_bytes(dir.file("x.safetensors")), expected);
  EXPECT_EQ(r.size_bytes, expected.size());
}

TEST(CheckpointSafetensors, ReaderParsesHandAssembledFile) {
  // Another writer's choices: spec key order, spaces in the JSON, metadata last, no 8-byte padding.
  const std::string json =
      R"({ "b": {"dtype": "U8", "shape": [3], "data_offsets": [8, 11]},)"
      R"( "a": {"shape": [2], "data_offsets": [0, 8], "dtype": "F32"}, "__metadata__": {"format": "pt"}})";
  const std::string bytes = le64(json.size()) + json + kBuffer;
  const auto f = SafetensorsFile::parse(bytes, "hand.safetensors");
  ASSERT_EQ(f.arrays().size(), 2u);
  const ArrayView& a = f.at("a");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(to_f32(a), (std::vector<float>{1.0f, -2.0f}));
  const ArrayView& b = f.at("b");
  EXPECT_EQ(b.dtype, DType::kU8);
  ASSERT_EQ(b.bytes.size(), 3u);
  EXPECT_EQ(static_cast<int>(b.bytes[2]), 3);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.find("c"), nullptr);
  EXPECT_THROW(f.at("c"), FormatError);
}

template <typename T>
std::vector<std::byte> raw(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TEST(CheckpointSafetensors, RoundTripEveryDtypeThroughAFile) {
  std::mt19937 rng(7);
  std::vector<Array> arrays;
  auto add = [&](std::string name, DType dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes) {
    arrays.push_back({std::move(name), dtype, std::move(shape), std::move(bytes)});
  };
  std::vector<float> f32(2 * 3 * 4);
  for (auto& x : f32) x = std::normal_distribution<float>()(rng);
  f32[0] = std::numeric_limits<float>::infinity();
  f32[1] = -0.0f;
  add("conv1/weights", DType::kF32, {2, 3, 4}, raw(f32));
  std::vector<uint16_t> h(7), bf(5);
  for (auto& x : h) x = static_cast<uint16_t>(rng());
  for (auto& x : bf) x = static_cast<uint16_t>(rng());
  add("half", DType::kF16, {7}, raw(h));
  add("brain", DType::kBF16, {5, 1}, raw(bf));
  add("i32", DType::kI32, {3}, raw(std::vector<int32_t>{INT32_MIN, -1, INT32_MAX}));
  add("i64", DType::kI64, {2}, raw(std::vector<int64_t>{INT64_MIN, int64_t{1} << 40}));
  add("u8", DType::kU8, {2, 2}, raw(std::vector<uint8_t>{0, 1, 254, 255}));
  add("scalar", DType::kF32, {}, raw(std::vector<float>{3.5f}));
  add("empty", DType::kI64, {0, 4}, {});
  add("\xd0\xba/\xc3\xa9 spaces \"quoted\"", DType::kU8, {1}, raw(std::vector<uint8_t>{42}));

  ScratchDir dir("st-roundtrip");
  const std::string path = dir.file("all.safetensors");
  const std::map<std::string, std::string> metadata = {{"step", "12"}, {"note", "\xc3\xa9"}};
  write_safetensors(path, views_of(arrays), metadata);
  const auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata(), metadata);
  ASSERT_EQ(f.arrays().size(), arrays.size());
  for (const auto& want : arrays) {
    SCOPED_TRACE(want.name);
    const ArrayView& got = f.at(want.name);
    EXPECT_EQ(got.dtype, want.dtype);
    EXPECT_EQ(got.shape, want.shape);
    ASSERT_EQ(got.bytes.size(), want.bytes.size());
    // (an empty array has no data pointer: memcmp may not be given null even for 0 bytes; UBSan)
    if (!want.bytes.empty()) {
      EXPECT_EQ(std::memcmp(got.bytes.data(), want.bytes.data(), want.bytes.size()), 0);
    }
  }
  // The data buffer starts 8-aligned and the tensors tile it in the order written.
  const std::string bytes = testing_util::read_bytes(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(reinterpret_cast<const char*>(f.at("conv1/weights").bytes.data()) - f.bytes().data(),
            static_cast<std::ptrdiff_t>(8 + n));
  // The same image in memory.
  EXPECT_EQ(encode_safetensors(views_of(arrays), metadata), bytes);
}

TEST(CheckpointSafetensors, WriterRejectsBadArrays) {
  const float x[2] = {};
  EXPECT_THROW(encode_safetensors(std::vector<ArrayView>{f32_view("a", {2}, x, 2), f32_view("a", {2}, x, 2)}), Error);
  EXPECT_THROW(encode_safetensors(std::vector<ArrayView>{f32_view("", {2}, x, 2)}), Error);
  EXPECT_THROW(encode_safetensors(std::vector<ArrayView>{f32_view("__metadata__", {2}, x, 2)}), Error);
  EXPECT_THROW(f32_view("a", {3}, x, 2), Error);  // shape needs 3 floats
  ArrayView bad = f32_view("a", {2}, x, 2);
  bad.shape = {5};
  EXPECT_THROW(encode_safetensors(std::vector<ArrayView>{bad}), Error);
  ScratchDir dir("st-badpath");
  EXPECT_THROW(write_safetensors(dir.file("no/such/dir/x.safetensors"), {}), IoError);
}

TEST(CheckpointSafetensors, EmptyFileOfNoTensors) {
  const std::string bytes = encode_safetensors({});
  EXPECT_EQ(bytes, le64(8) + "{}      ");
  EXPECT_TRUE(SafetensorsFile::parse(bytes, "empty").arrays().empty());
}

TEST(CheckpointSafetensors, HalfPrecisionKnownAnswers) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);                        // largest finite half
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);                        // halfway to 2^16: rounds to even = Inf
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);           // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);           // half of it: ties to even (0)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);           // smallest normal
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);    // tie between 0x3c00 and 0x3c01: even
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie between 0x3c01 and 0x3c02: even
  EXPECT_EQ(f16_bits_to_f32(0x3555), 0x1.554p-2f);                     // 0.333...
  EXPECT_EQ(f16_bits_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(f16_bits_to_f32(0xfc00)) && f16_bits_to_f32(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN keeps its sign and the top of its payload, made quiet: what a checkpoint was given survives.
  EXPECT_EQ(f32_to_f16_bits(std::bit_cast<float>(0xFFC12345u)), 0xFE09);
  EXPECT_EQ(f32_to_f16_bits(std::bit_cast<float>(0x7F802000u)), 0x7E01);  // signalling NaN: made quiet
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie: even
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie: even (up)
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(bf16_bits_to_f32(0xc0a0), -5.0f);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(CheckpointSafetensors, HalfPrecisionExhaustive) {
  // Every half decodes to a float that encodes back to it (NaNs stay NaN), and decoding is monotonic.
  float prev = -std::numeric_limits<float>::infinity();
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(f)))) << h;
      continue;
    }
    EXPECT_EQ(f32_to_f16_bits(f), h) << h;
    if (h >= 0x0001 && h <= 0x7c00) {
      EXPECT_GT(f, prev) << h;
      prev = f;
    }
  }
  // Random floats round to the nearest half, ties to even (checked against the neighbours in double).
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) {
    // Exponents 2^-27 .. 2^16: below the subnormals up to past the largest half; any sign.
    const uint32_t bits = (rng() & 0x80000000u) | ((100u + rng() % 44u) << 23) | (rng() & 0x7fffffu);
    const float x = std::bit_cast<float>(bits);
    const uint16_t h = f32_to_f16_bits(x);
    const double got = f16_bits_to_f32(h);
    if (std::isinf(got)) {
      EXPECT_GE(std::fabs(x), 65520.0f) << x;
      continue;
    }
    const double err = std::fabs(got - x);
    for (int d : {-1, 1}) {
      const uint16_t n = static_cast<uint16_t>(h + d);
      if ((n & 0x7fff) > 0x7c00 || ((h & 0x7fff) == 0 && d == -1)) continue;
      const double other = std::fabs(static_cast<double>(f16_bits_to_f32(n)) - x);
      EXPECT_LE(err, other) << x;
      if (err == other) {
        EXPECT_EQ(h & 1, 0) << x;
      }
    }
  }
}

TEST(CheckpointSafetensors, ToF32ConvertsFloatDtypes) {
  const uint16_t h[] = {0x3c00, 0xc000};
  const uint16_t b[] = {0x3f80, 0xc0a0};
  EXPECT_EQ(to_f32(typed_view("h", DType::kF16, {2}, h, 4)), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(to_f32(typed_view("b", DType::kBF16, {2}, b, 4)), (std::vector<float>{1.0f, -5.0f}));
  const int32_t i[] = {1};
  EXPECT_THROW(to_f32(typed_view("i", DType::kI32, {1}, i, 4)), FormatError);
  float dst[3];
  EXPECT_THROW(to_f32(typed_view("h", DType::kF16, {2}, h, 4), dst, 3), FormatError);
  EXPECT_THROW(copy_to(typed_view("h", DType::kF16, {2}, h, 4), dst, 12), FormatError);
}

}  // namespace
}  // namespace fastnn::checkpoint
