// x86 CRC-32C: the SSE4.2 crc32 instruction over three interleaved streams, and PCLMULQDQ folding.
// Compiled with per-function target attributes, so no -march flag is needed; crc32c.cpp only calls
// these after checking the CPU.
//
// The math, in one place. Bit i of a reflected 32-bit CRC value holds the coefficient of x^(31-i).
// Feeding n zero bytes to a CRC register r gives r * x^(8n) mod P, and the register is linear in the
// data, so independently computed streams combine as
//   crc(A B C) = shift(|B|+|C|, crc(A)) ^ shift(|C|, crc0(B)) ^ crc0(C)
// where crc0 starts from register 0. For folding, a 128-bit lane holds a polynomial with bit j
// (little-endian) the coefficient of x^(127-j); PCLMULQDQ of its 64-bit half with a reflected 32-bit
// constant R(x^(e-33) mod P) yields that half times x^e, reduced enough to fit 128 bits again.
#include "core/crc32c.h"

#include <array>
#include <cstring>

#include "core/check.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FASTNN_CRC_X86 1
#endif

namespace fastnn {
namespace {

constexpr uint32_t mul_x(uint32_t a) { return (a >> 1) ^ ((a & 1) ? kCrc32cPolynomial : 0); }

constexpr uint32_t mulmod(uint32_t a, uint32_t b) {
  uint32_t p = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & (0x80000000u >> i)) p ^= b;
    b = mul_x(b);
  }
  return p;
}

// x^n mod P, reflected.
constexpr uint32_t x_pow(uint64_t n) {
  uint32_t r = 0x80000000u, sq = mul_x(0x80000000u);
  for (; n; n >>= 1) {
    if (n & 1) r = mulmod(r, sq);
    sq = mulmod(sq, sq);
  }
  return r;
}

// shift(r) = r * x^(8*bytes) mod P as four byte-indexed lookups (the operator is linear in r).
using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;
constexpr ShiftTable make_shift(uint64_t bytes) {
  ShiftTable t{};
  const uint32_t m = x_pow(8 * bytes);
  for (int k = 0; k < 4; ++k)
    for (uint32_t v = 0; v < 256; ++v) t[k][v] = mulmod(v << (8 * k), m);
  return t;
}

constexpr size_t kLong = 8192;  // bytes per stream for large inputs
constexpr size_t kShort = 256;  // bytes per stream for medium inputs
constexpr ShiftTable kShiftLong = make_shift(kLong);
constexpr ShiftTable kShiftShort = make_shift(kShort);

inline uint32_t shift(const ShiftTable& t, uint32_t r) {
  return t[0][r & 0xff] ^ t[1][(r >> 8) & 0xff] ^ t[2][(r >> 16) & 0xff] ^ t[3][r >> 24];
}

// Folding constants (see the top of the file): fold by F bits uses c(F + 64) for the high-degree
// half (low qword) and c(F) for the low-degree half.
constexpr uint64_t c(uint64_t e) { return x_pow(e - 33); }

#ifdef FASTNN_CRC_X86

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Register-level (already inverted) crc32 instruction loop, single stream.
__attribute__((target("sse4.2"))) inline uint32_t hw_serial(uint32_t r, const uint8_t* p, size_t n) {
  uint64_t r64 = r;
  for (; n >= 8; n -= 8, p += 8) r64 = _mm_crc32_u64(r64, load64(p));
  r = static_cast<uint32_t>(r64);
  for (; n > 0; --n, ++p) r = _mm_crc32_u8(r, *p);
  return r;
}

// Three streams of `block` bytes each, combined with the shift table for `block`.
template <size_t block>
__attribute__((target("sse4.2"))) inline uint32_t hw_three_way(uint32_t r, const uint8_t*& p, size_t& n,
                                                               const ShiftTable& t) {
  while (n >= 3 * block) {
    uint64_t a = r, b = 0, d = 0;
    for (size_t i = 0; i < block; i += 8) {
      a = _mm_crc32_u64(a, load64(p + i));
      b = _mm_crc32_u64(b, load64(p + block + i));
      d = _mm_crc32_u64(d, load64(p + 2 * block + i));
    }
    r = shift(t, shift(t, static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(d);
    p += 3 * block;
    n -= 3 * block;
  }
  return r;
}

__attribute__((target("sse4.2"))) uint32_t sse42_register(uint32_t r, const uint8_t* p, size_t n) {
  r = hw_three_way<kLong>(r, p, n, kShiftLong);
  r = hw_three_way<kShort>(r, p, n, kShiftShort);
  return hw_serial(r, p, n);
}

// ---- Carry-less-multiply folding, run beside three crc32 streams ----
//
// PCLMULQDQ and crc32 use different execution units, so a block is split into a region F that is
// folded (8 x 16-byte lanes, 128 bytes a step) and three regions that crc32 streams take kCrc bytes
// a step from, all in one loop; the four results are combined with shift_clmul. The VPCLMULQDQ
// variant folds the same 8 lanes as 4 x 32-byte registers, twice the bytes per instruction.

constexpr size_t kStep = 128;  // folded bytes per step

#define FASTNN_PCLMUL __attribute__((target("sse4.2,pclmul")))
#define FASTNN_VPCLMUL __attribute__((target("sse4.2,pclmul,avx2,vpclmulqdq")))

FASTNN_PCLMUL inline __m128i fold(__m128i a, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

FASTNN_PCLMUL inline __m128i load128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Constants for folding by `bytes`: the low qword multiplies the high-degree half. (Template
// arguments keep c() at compile time; it is a loop of polynomial multiplications.)
template <size_t bytes>
FASTNN_PCLMUL inline __m128i fold_constants() {
  constexpr uint64_t lo = c(8 * bytes + 64), hi = c(8 * bytes);
  return _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
}

// r * x^(8 * bytes) mod P with one carry-less multiply and one crc32: crc32 of the 64-bit product
// r * R(x^(e-33)) multiplies it by x^33, which c(e) already accounts for.
template <size_t bytes>
FASTNN_PCLMUL inline uint32_t shift_clmul(uint32_t r) {
  constexpr uint64_t k = c(8 * bytes);
  __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(r)),
                                      _mm_cvtsi64_si128(static_cast<long long>(k)), 0x00);
  return static_cast<uint32_t>(_mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(prod))));
}

// Folds lanes (in message order) into one and reduces it to a CRC register: the 16 bytes left are
// a message congruent to the whole region, so crc32 of them from register 0 is its register.
FASTNN_PCLMUL inline uint32_t reduce_lanes(const __m128i* lanes, size_t count) {
  const __m128i k128 = fold_constants<16>();
  __m128i a = lanes[0];
  for (size_t i = 1; i < count; ++i) a = _mm_xor_si128(fold(a, k128), lanes[i]);
  uint64_t r = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(a)));
  return static_cast<uint32_t>(_mm_crc32_u64(r, static_cast<uint64_t>(_mm_extract_epi64(a, 1))));
}

template <size_t kCrc>
__attribute__((target("sse4.2"))) inline void crc_streams(uint64_t* s, const uint8_t* p, size_t stride) {
  for (size_t j = 0; j < kCrc; j += 8) {
    s[0] = _mm_crc32_u64(s[0], load64(p + j));
    s[1] = _mm_crc32_u64(s[1], load64(p + stride + j));
    s[2] = _mm_crc32_u64(s[2], load64(p + 2 * stride + j));
  }
}

// Register after region F (folded, starting from register r) and the three stream regions.
template <size_t stream_bytes>
FASTNN_PCLMUL inline uint32_t combine(uint32_t f, const uint64_t* s) {
  return shift_clmul<3 * stream_bytes>(f) ^ shift_clmul<2 * stream_bytes>(static_cast<uint32_t>(s[0])) ^
         shift_clmul<stream_bytes>(static_cast<uint32_t>(s[1])) ^ static_cast<uint32_t>(s[2]);
}

constexpr size_t kPclmulCrc = 128, kPclmulIters = 32;  // 16 KiB blocks; tuned on Zen 3
constexpr size_t kPclmulBlock = (kStep + 3 * kPclmulCrc) * kPclmulIters;

FASTNN_PCLMUL uint32_t pclmul_block(uint32_t r, const uint8_t* p) {
  constexpr size_t kStream = kPclmulCrc * kPclmulIters;
  const uint8_t* q = p + kStep * kPclmulIters;
  __m128i acc[8];
  for (size_t i = 0; i < 8; ++i) acc[i] = load128(p + 16 * i);
  acc[0] = _mm_xor_si128(acc[0], _mm_cvtsi32_si128(static_cast<int>(r)));  // the register joins the data
  const __m128i k = fold_constants<kStep>();
  uint64_t s[3] = {0, 0, 0};
  for (size_t it = 0; it < kPclmulIters; ++it) {
    if (it + 1 < kPclmulIters) {
      const uint8_t* f = p + (it + 1) * kStep;
      for (size_t i = 0; i < 8; ++i) acc[i] = _mm_xor_si128(fold(acc[i], k), load128(f + 16 * i));
    }
    crc_streams<kPclmulCrc>(s, q + it * kPclmulCrc, kStream);
  }
  return combine<kStream>(reduce_lanes(acc, 8), s);
}

constexpr size_t kVpclmulCrc = 32, kVpclmulIters = 32;  // 7 KiB blocks; tuned on Zen 3
constexpr size_t kVpclmulBlock = (kStep + 3 * kVpclmulCrc) * kVpclmulIters;

FASTNN_VPCLMUL inline __m256i fold256(__m256i a, __m256i k) {
  return _mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00), _mm256_clmulepi64_epi128(a, k, 0x11));
}

FASTNN_VPCLMUL uint32_t vpclmul_block(uint32_t r, const uint8_t* p) {
  constexpr size_t kStream = kVpclmulCrc * kVpclmulIters;
  const uint8_t* q = p + kStep * kVpclmulIters;
  __m256i acc[4];
  for (size_t i = 0; i < 4; ++i) acc[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * i));
  acc[0] = _mm256_xor_si256(acc[0], _mm256_zextsi128_si256(_mm_cvtsi32_si128(static_cast<int>(r))));
  const __m256i k = _mm256_broadcastsi128_si256(fold_constants<kStep>());
  uint64_t s[3] = {0, 0, 0};
  for (size_t it = 0; it < kVpclmulIters; ++it) {
    if (it + 1 < kVpclmulIters) {
      const uint8_t* f = p + (it + 1) * kStep;
      for (size_t i = 0; i < 4; ++i)
        acc[i] = _mm256_xor_si256(fold256(acc[i], k),
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + 32 * i)));
    }
    crc_streams<kVpclmulCrc>(s, q + it * kVpclmulCrc, kStream);
  }
  __m128i lanes[8];
  for (size_t i = 0; i < 4; ++i) {
    lanes[2 * i] = _mm256_castsi256_si128(acc[i]);
    lanes[2 * i + 1] = _mm256_extracti128_si256(acc[i], 1);
  }
  return combine<kStream>(reduce_lanes(lanes, 8), s);
}

#endif  // FASTNN_CRC_X86

}  // namespace

#ifdef FASTNN_CRC_X86

bool crc32c_has_sse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

bool crc32c_has_pclmul() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
}

bool crc32c_has_vpclmul() {
  // __builtin_cpu_supports("avx2") also checks that the OS saves the YMM registers.
  return crc32c_has_pclmul() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq");
}

uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t size) {
  return ~sse42_register(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t crc32c_extend_pclmul(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t r = ~crc;
  for (; size >= kPclmulBlock; size -= kPclmulBlock, p += kPclmulBlock) r = pclmul_block(r, p);
  return ~sse42_register(r, p, size);
}

uint32_t crc32c_extend_vpclmul(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t r = ~crc;
  for (; size >= kVpclmulBlock; size -= kVpclmulBlock, p += kVpclmulBlock) r = vpclmul_block(r, p);
  return ~sse42_register(r, p, size);
}

#else

bool crc32c_has_sse42() { return false; }
bool crc32c_has_pclmul() { return false; }
bool crc32c_has_vpclmul() { return false; }
uint32_t crc32c_extend_sse42(uint32_t, const void*, size_t) {
  FASTNN_CHECK(false, "crc32c_extend_sse42 called on a CPU without SSE4.2");
  return 0;
}
uint32_t crc32c_extend_pclmul(uint32_t, const void*, size_t) {
  FASTNN_CHECK(false, "crc32c_extend_pclmul called on a CPU without PCLMULQDQ");
  return 0;
}
uint32_t crc32c_extend_vpclmul(uint32_t, const void*, size_t) {
  FASTNN_CHECK(false, "crc32c_extend_vpclmul called on a CPU without VPCLMULQDQ");
  return 0;
}

#endif

}  // namespace fastnn
