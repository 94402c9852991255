#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fastnn {
namespace {

using Fn = uint32_t (*)(uint32_t, const void*, size_t);
struct Impl {
  const char* name;
  Fn fn;
};

// Every implementation this CPU can run, plus the dispatching entry point.
std::vector<Impl> impls() {
  std::vector<Impl> v{{"portable", crc32c_extend_portable}, {"dispatch", crc32c_extend}};
  if (crc32c_has_sse42()) v.push_back({"sse42", crc32c_extend_sse42});
  if (crc32c_has_pclmul()) v.push_back({"pclmul", crc32c_extend_pclmul});
  if (crc32c_has_vpclmul()) v.push_back({"vpclmul", crc32c_extend_vpclmul});
  return v;
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// A bit-at-a-time CRC straight from the definition, independent of the table code under test.
uint32_t crc_bitwise(const uint8_t* p, size_t n) {
  uint32_t r = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    r ^= p[i];
    for (int k = 0; k < 8; ++k) r = (r >> 1) ^ ((r & 1) ? 0x82F63B78u : 0);
  }
  return ~r;
}

TEST(Crc32c, CheckValue) {
  for (const Impl& im : impls()) EXPECT_EQ(im.fn(0, "123456789", 9), 0xE3069283u) << im.name;
  EXPECT_EQ(crc32c(std::string_view("123456789")), 0xE3069283u);
  EXPECT_EQ(crc_bitwise(reinterpret_cast<const uint8_t*>("123456789"), 9), 0xE3069283u);
}

// RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32c, Rfc3720Vectors) {
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  const std::vector<uint8_t> read_pdu = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
      0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  struct Vec {
    const std::vector<uint8_t>* data;
    uint32_t crc;
  };
  const Vec vectors[] = {{&zeros, 0x8A9136AAu}, {&ones, 0x62A8AB43u}, {&inc, 0x46DD794Eu},
                         {&dec, 0x113FDB5Cu},   {&read_pdu, 0xD9963A56u}};
  for (const Vec& v : vectors) {
    EXPECT_EQ(crc_bitwise(v.data->data(), v.data->size()), v.crc);
    for (const Impl& im : impls()) EXPECT_EQ(im.fn(0, v.data->data(), v.data->size()), v.crc) << im.name;
  }
}

TEST(Crc32c, DispatchNamesAnAvailableImplementation) {
  std::string name = crc32c_implementation();
  if (crc32c_has_vpclmul()) {
    EXPECT_EQ(name, "vpclmul");
  } else if (crc32c_has_pclmul()) {
    EXPECT_EQ(name, "pclmul");
  } else if (crc32c_has_sse42()) {
    EXPECT_EQ(name, "sse42");
  } else {
    EXPECT_EQ(name, "portable");
  }
}

// Every length 0..2000 at every start offset 0..15 and a random incoming CRC: all implementations
// agree with the bitwise definition (this walks the tails, the 3-stream and folding block edges).
TEST(Crc32c, ImplementationsAgreeOnAllShortLengthsAndAlignments) {
  const auto buf = random_bytes(2000 + 16, 1);
  const auto all = impls();
  std::mt19937 rng(2);
  for (size_t off = 0; off < 16; ++off) {
    for (size_t n = 0; n <= 2000; ++n) {
      const uint8_t* p = buf.data() + off;
      const uint32_t want = crc_bitwise(p, n);
      const uint32_t seed = rng();
      const uint32_t want_seeded = crc32c_extend_portable(seed, p, n);
      for (const Impl& im : all) {
        ASSERT_EQ(im.fn(0, p, n), want) << im.name << " n=" << n << " off=" << off;
        ASSERT_EQ(im.fn(seed, p, n), want_seeded) << im.name << " n=" << n << " off=" << off;
      }
    }
  }
}

// Long inputs reach the 3 x 8 KiB blocks and the folding main loop; lengths straddle their edges.
TEST(Crc32c, ImplementationsAgreeOnLongInputs) {
  const auto buf = random_bytes((1 << 20) + 64, 3);
  // Block sizes: sse42 3 x 8 KiB, pclmul 16 KiB, vpclmul 7 KiB.
  std::vector<size_t> lengths = {3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 6 * 8192 + 767, 16384, 16383,
                                 32768 + 5,    7168,     7167,         14336 + 800,   1 << 20};
  std::mt19937 rng(4);
  for (int i = 0; i < 40; ++i) lengths.push_back(rng() % (1 << 20));
  for (size_t n : lengths) {
    const size_t off = rng() % 64;
    const uint32_t want = crc32c_extend_portable(0x12345678u, buf.data() + off, n);
    for (const Impl& im : impls()) EXPECT_EQ(im.fn(0x12345678u, buf.data() + off, n), want) << im.name << " n=" << n;
  }
  EXPECT_EQ(crc32c_extend_portable(0, buf.data(), 100000), crc_bitwise(buf.data(), 100000));
}

TEST(Crc32c, ExtendComposes) {
  const auto buf = random_bytes(70000, 5);
  std::mt19937 rng(6);
  for (const Impl& im : impls()) {
    for (int i = 0; i < 50; ++i) {
      size_t n = rng() % buf.size();
      size_t cut = n ? rng() % (n + 1) : 0;
      uint32_t whole = im.fn(0, buf.data(), n);
      uint32_t parts = im.fn(im.fn(0, buf.data(), cut), buf.data() + cut, n - cut);
      ASSERT_EQ(parts, whole) << im.name << " n=" << n << " cut=" << cut;
    }
  }
  // Byte by byte equals all at once.
  uint32_t r = 0;
  for (size_t i = 0; i < 1000; ++i) r = crc32c_extend(r, buf.data() + i, 1);
  EXPECT_EQ(r, crc32c(buf.data(), 1000));
}

TEST(Crc32c, MaskRoundTripsAndMatchesTheFormula) {
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    uint32_t v = rng();
    EXPECT_EQ(crc32c_unmask(crc32c_mask(v)), v);
    EXPECT_EQ(crc32c_mask(crc32c_unmask(v)), v);
  }
  // TFRecord's mask: rotate right by 15, add 0xa282ead8 (mod 2^32). Computed here with 64-bit
  // arithmetic, differently from the header.
  const uint64_t crc = 0xE3069283u;  // CRC32C("123456789")
  const uint64_t doubled = (crc << 32) | crc;
  const uint64_t rotated = (doubled >> 15) & 0xffffffffu;
  const uint32_t want = static_cast<uint32_t>((rotated + 0xa282ead8u) % (uint64_t{1} << 32));
  EXPECT_EQ(crc32c_mask(crc32c(std::string_view("123456789"))), want);
  EXPECT_NE(crc32c_mask(0), 0u);  // a zero CRC does not stay zero
}

}  // namespace
}  // namespace fastnn
