// Portable CRC-32C (slicing-by-8) and the run-time choice of implementation. The x86 paths live in
// crc32c_x86.cpp.
#include "core/crc32c.h"

#include <array>
#include <bit>
#include <cstring>

namespace fastnn {
namespace {

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// kTables[k][b]: the register contribution of byte b followed by k zero bytes, so eight bytes are
// folded with eight independent lookups instead of a chain of eight.
constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int i = 0; i < 8; ++i) r = (r >> 1) ^ ((r & 1) ? kCrc32cPolynomial : 0);
    t[0][b] = r;
  }
  for (int k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  return t;
}
constexpr Tables kTables = make_tables();

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

}  // namespace

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t r = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t w = load_le64(p) ^ r;
    r = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
        kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
        kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
  }
  for (; size > 0; --size, ++p) r = (r >> 8) ^ kTables[0][(r ^ *p) & 0xff];
  return ~r;
}

namespace {

struct Choice {
  uint32_t (*fn)(uint32_t, const void*, size_t);
  const char* name;
};

Choice choose() {
  if (crc32c_has_vpclmul()) return {crc32c_extend_vpclmul, "vpclmul"};
  if (crc32c_has_pclmul()) return {crc32c_extend_pclmul, "pclmul"};
  if (crc32c_has_sse42()) return {crc32c_extend_sse42, "sse42"};
  return {crc32c_extend_portable, "portable"};
}

const Choice& chosen() {
  static const Choice c = choose();  // thread-safe one-time initialisation
  return c;
}

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size) { return chosen().fn(crc, data, size); }

const char* crc32c_implementation() { return chosen().name; }

}  // namespace fastnn
