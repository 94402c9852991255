// CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected 0x82F63B78), as used by TFRecord framing.
//
// crc32c_extend() picks the fastest implementation the CPU supports once, at first use:
// carry-less-multiply folding run beside three crc32 streams (256-bit VPCLMULQDQ + AVX2, else
// 128-bit PCLMULQDQ, both with SSE4.2), or three interleaved SSE4.2 crc32 streams, else a portable
// slicing-by-8 table. All implementations return identical values (tested against each
// other and against RFC 3720's vectors). Thread-safe, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fastnn {

// The reflected polynomial every implementation divides by.
inline constexpr uint32_t kCrc32cPolynomial = 0x82F63B78u;

// Continues a CRC: crc32c_extend(crc32c(a), b) == crc32c(a + b). Start from 0.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);
inline uint32_t crc32c(const void* data, size_t size) { return crc32c_extend(0, data, size); }
inline uint32_t crc32c(std::string_view s) { return crc32c_extend(0, s.data(), s.size()); }

// The individual implementations, for tests and benchmarks. A hardware one called on a CPU without
// the instruction set is a programming error (check crc32c_has_*() first).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t size);
uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t size);
uint32_t crc32c_extend_pclmul(uint32_t crc, const void* data, size_t size);
uint32_t crc32c_extend_vpclmul(uint32_t crc, const void* data, size_t size);
bool crc32c_has_sse42();
bool crc32c_has_pclmul();   // PCLMULQDQ and SSE4.2
bool crc32c_has_vpclmul();  // VPCLMULQDQ, AVX2 (with OS support), PCLMULQDQ and SSE4.2
// Name of the implementation crc32c_extend() uses: "vpclmul", "pclmul", "sse42" or "portable".
const char* crc32c_implementation();

// TFRecord stores masked CRCs so that a CRC of data containing CRCs stays well distributed.
inline uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace fastnn
