#include "trainer/tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

namespace fastnn {
namespace {

TEST(Tensor, EmptyZerosFromAndMetadata) {
  Tensor t = Tensor::zeros({2, 3, 4, 5}, DType::kF32, Layout::kNCHW);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.numel(), 120);
  EXPECT_EQ(t.nbytes(), 480u);
  EXPECT_EQ(t.ndim(), 4);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.describe(), "f32[2,3,4,5] nchw cpu");
  for (float v : t.to_vector<float>()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);

  Tensor u = Tensor::from<int64_t>({3}, {7, -1, 9});
  EXPECT_EQ(u.dtype(), DType::kI64);
  EXPECT_EQ(u.to_vector<int64_t>(), (std::vector<int64_t>{7, -1, 9}));
  EXPECT_FALSE(Tensor().defined());
  EXPECT_EQ(Tensor().describe(), "undefined");
  EXPECT_EQ(Tensor::empty({0, 4}).numel(), 0);
}

TEST(Tensor, RejectsBadShapesDtypesAndLayouts) {
  EXPECT_THROW(Tensor::empty({2, -1}), Error);
  EXPECT_THROW(Tensor::empty({int64_t{1} << 30, int64_t{1} << 30}), Error);
  EXPECT_THROW(Tensor::empty({2, 3}, DType::kF32, Device::kCpu, Layout::kNCHW), Error);
  EXPECT_THROW((Tensor::from<float>({2, 2}, {1.0f, 2.0f, 3.0f})), Error);
  Tensor t = Tensor::zeros({4});
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(t.dim(1), Error);
  EXPECT_NO_THROW(t.data<float>());
}

TEST(Tensor, ReshapeSharesCloneCopies) {
  Tensor t = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshape({3, 2});
  Tensor c = t.clone();
  t.data<float>()[0] = 42;
  EXPECT_EQ(r.data<float>()[0], 42);
  EXPECT_EQ(c.data<float>()[0], 1);
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_THROW(t.reshape({4, 2}), Error);
}

TEST(Tensor, ConvertsBetweenDtypes) {
  Tensor t = Tensor::from<float>({4}, {1.5f, -2.75f, 3.0f, 96.5f});
  EXPECT_EQ(t.to(DType::kI32).to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3, 96}));
  EXPECT_EQ(t.to(DType::kF64).to_vector<double>(), (std::vector<double>{1.5, -2.75, 3.0, 96.5}));
  // All four are exact in f16 and bf16.
  EXPECT_EQ(t.to(DType::kF16).to_vector<float>(), t.to_vector<float>());
  EXPECT_EQ(t.to(DType::kBF16).to_vector<float>(), t.to_vector<float>());
  Tensor big = Tensor::from<int64_t>({1}, {(int64_t{1} << 53) + 1});
  EXPECT_EQ(big.to(DType::kI64).to_vector<int64_t>()[0], (int64_t{1} << 53) + 1);
  Tensor f = Tensor::zeros({3}, DType::kF64);
  f.fill(0.5);
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{0.5, 0.5, 0.5}));
}

// A Storage that claims to be on the GPU but is host memory, to exercise the allocator hook.
class FakeDeviceStorage final : public Storage {
 public:
  explicit FakeDeviceStorage(size_t bytes) : buf_(bytes) {
    data_ = buf_.data();
    bytes_ = bytes;
  }
  Device device() const override { return Device::kCuda; }

 private:
  std::vector<unsigned char> buf_;
};

TEST(Tensor, DeviceAllocatorIsPluggable) {
  EXPECT_THROW(Tensor::empty({4}, DType::kF32, Device::kCuda), Error);
  set_storage_allocator(Device::kCuda, [](size_t b) -> std::shared_ptr<Storage> {
    return std::make_shared<FakeDeviceStorage>(b);
  });
  Tensor t = Tensor::empty({4}, DType::kF32, Device::kCuda);
  EXPECT_EQ(t.device(), Device::kCuda);
  EXPECT_THROW(t.zero(), Error);  // CPU-only helpers refuse device tensors
  EXPECT_THROW(t.clone(), Error);
  set_storage_allocator(Device::kCuda, nullptr);
  EXPECT_THROW(Tensor::empty({4}, DType::kF32, Device::kCuda), Error);
}

// ---- f16 ----

TEST(Half, KnownValues) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);           // largest finite
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7BFF);           // below the halfway point to 65536
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);           // halfway, odd mantissa: rounds up to inf
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // halfway to it: ties to even (0)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: ties to even (2)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, even stays
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3C02);      // tie, odd goes up
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(1e-30f), 0x0000);
  const uint16_t nan = f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x3FF, 0);
  EXPECT_EQ(f16_bits_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16_bits(f), h) << std::hex << h;
  }
}

#if defined(__FLT16_MAX__)
// Differential test against the compiler's own _Float16 conversion (libgcc, round to nearest even).
TEST(Half, MatchesCompilerFloat16OnRandomFloats) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    // Bias exponents towards the f16 range so subnormals, normals and overflow all get hit.
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x807FFFFFu) | ((100u + rng() % 50u) << 23);
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    ASSERT_EQ(f32_to_f16_bits(f), std::bit_cast<uint16_t>(ref)) << f;
  }
}
#endif

// ---- bf16 ----

// Reference: pick the nearer of the two bf16 neighbours in double, ties to the even one.
uint16_t bf16_reference(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t lo = x & 0xFFFF0000u, hi = lo + 0x10000u;
  const double vlo = std::bit_cast<float>(lo);
  const double vhi = (hi & 0x7F800000u) == 0x7F800000u ? std::copysign(std::ldexp(1.0, 128), f)
                                                       : static_cast<double>(std::bit_cast<float>(hi));
  const double dlo = std::fabs(f - vlo), dhi = std::fabs(vhi - f);
  if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1) == 0)) return static_cast<uint16_t>(lo >> 16);
  return static_cast<uint16_t>(hi >> 16);
}

TEST(BFloat16, KnownValuesAndReference) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie, odd goes up
  EXPECT_EQ(f32_to_bf16_bits(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80);
  const uint16_t nan = f32_to_bf16_bits(std::bit_cast<float>(0x7F800001u));  // signalling NaN stays NaN
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(nan)));
  EXPECT_EQ(bf16_bits_to_f32(0x4049), 3.140625f);
  std::mt19937 rng(11);
  for (int i = 0; i < 2000000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16_bits(f), bf16_reference(f)) << std::hex << std::bit_cast<uint32_t>(f);
  }
}

}  // namespace
}  // namespace fastnn
