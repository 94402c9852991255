// Slices of partitioned variables: TensorFlow's OrderedCode keys (the examples of ordered_code.cc's
// format description), tiling checks, and the copy of a slice into its tensor against an index loop.
#include "core/tf_checkpoint/tensor_slices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/named_array.h"

namespace fastnn::tf_checkpoint {
namespace {

using ::testing::HasSubstr;

std::string hex(const std::string& s) {
  std::string h;
  for (unsigned char c : s) h += "0123456789abcdef"[c >> 4], h += "0123456789abcdef"[c & 15];
  return h;
}

std::string signed_code(int64_t v) {
  std::string s;
  ordered_code_signed(&s, v);
  return hex(s);
}

TEST(TfSlices, OrderedCodeMatchesTheFormatDescription) {
  EXPECT_EQ(signed_code(0x424242), "f0424242");  // ordered_code.cc, example 1
  EXPECT_EQ(signed_code(-0x800), "3800");        // example 2
  EXPECT_EQ(signed_code(0), "80");
  EXPECT_EQ(signed_code(-1), "7f");
  EXPECT_EQ(signed_code(63), "bf");
  EXPECT_EQ(signed_code(64), "c040");
  EXPECT_EQ(signed_code(-64), "40");
  EXPECT_EQ(signed_code(-65), "3fbf");
  EXPECT_EQ(signed_code(INT64_MAX), "ffc07fffffffffffffff");  // 10 bytes: 0xff, 0xc0 header
  EXPECT_EQ(signed_code(INT64_MIN), "003f8000000000000000");
  std::string u;
  ordered_code_unsigned(&u, 0);
  ordered_code_unsigned(&u, 258);
  EXPECT_EQ(hex(u), "00020102");
  std::string s;
  ordered_code_string(&s, std::string("a\0b\xff", 4));
  EXPECT_EQ(hex(s), "6100ff62ff000001");
}

TEST(TfSlices, OrderedSignedCodesSortAsTheirValues) {
  std::vector<int64_t> v = {INT64_MIN, -(int64_t{1} << 40), -65536, -8193, -8192, -65, -64, -1, 0, 1, 63, 64, 8191,
                            8192, 1 << 20, int64_t{1} << 55, INT64_MAX};
  for (size_t i = 1; i < v.size(); ++i) {
    std::string a, b;
    ordered_code_signed(&a, v[i - 1]);
    ordered_code_signed(&b, v[i]);
    EXPECT_LT(a, b) << v[i - 1] << " vs " << v[i];
  }
}

TEST(TfSlices, SliceKeyEncodesNameRankAndExtents) {
  // part/weights rows 4..6 of [10, 3]: 0, the name, rank 2, (4, 3), (0, -1).
  const std::string key = slice_key("part/weights", {{4, 3}, {0, -1}});
  EXPECT_EQ(hex(key), "00" + hex("part/weights") + "0001" + "0102" + "8483" + "807f");
  EXPECT_EQ(slice_string({{4, 3}, {0, -1}}), "4,3:-");
}

TEST(TfSlices, TilingMustCoverEveryElementOnce) {
  const std::vector<int64_t> shape = {10, 3};
  check_tiling(std::vector<Slice>{{{0, 4}, {0, -1}}, {{4, 3}, {0, -1}}, {{7, 3}, {0, -1}}}, shape, "t");
  check_tiling(std::vector<Slice>{{{0, -1}, {0, -1}}}, shape, "t");
  auto error = [&](std::vector<Slice> s) {
    try {
      check_tiling(s, shape, "m.ckpt: tensor 'w'");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_THAT(error({{{0, 4}, {0, -1}}, {{5, 5}, {0, -1}}}), HasSubstr("hold 27 elements, the tensor [10, 3] has 30"));
  EXPECT_THAT(error({{{0, 6}, {0, -1}}, {{4, 3}, {0, 3}}, {{7, 1}, {0, 3}}}),
              HasSubstr("m.ckpt: tensor 'w': slices 0,6:- and 4,3:0,3 overlap"));
  EXPECT_THAT(error({}), HasSubstr("0 slices"));
}

TEST(TfSlices, CopySliceMatchesAnIndexLoop) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t rank = 1 + rng() % 4;
    std::vector<int64_t> shape(rank);
    Slice s(rank);
    for (size_t d = 0; d < rank; ++d) {
      shape[d] = 1 + rng() % 5;
      if (rng() % 3 == 0) continue;  // whole dimension
      s[d].start = rng() % shape[d];
      s[d].length = rng() % (shape[d] - s[d].start + 1);
    }
    const std::vector<int64_t> len = slice_shape(s, shape);
    const uint64_t n = checkpoint::element_count(len), total = checkpoint::element_count(shape);
    std::vector<int32_t> src(n), dst(total, -1), want(total, -1);
    std::iota(src.begin(), src.end(), 0);
    // The reference: every index of the slice, row-major.
    std::vector<int64_t> idx(rank, 0);
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off = off * static_cast<uint64_t>(shape[d]) + static_cast<uint64_t>(s[d].start + idx[d]);
      want[off] = static_cast<int32_t>(k);
      for (size_t d = rank; d-- > 0;)
        if (++idx[d] < len[d]) break;
        else idx[d] = 0;
    }
    copy_slice(s, shape, sizeof(int32_t), reinterpret_cast<const std::byte*>(src.data()),
               reinterpret_cast<std::byte*>(dst.data()));
    ASSERT_EQ(dst, want) << "trial " << trial << " shape " << checkpoint::shape_string(shape) << " slice " << slice_string(s);
  }
}

}  // namespace
}  // namespace fastnn::tf_checkpoint
