#include "core/base64.h"

#include <array>

#include "core/check.h"

namespace fastnn {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr uint32_t kBad = 0x01000000;  // bit 24: never set by a valid 6-bit value at any shift

// table(shift)[c] = value(c) << shift, or kBad for a character outside the alphabet (including '=').
constexpr std::array<uint32_t, 256> make_table(int shift) {
  std::array<uint32_t, 256> t{};
  for (auto& v : t) v = kBad;
  for (uint32_t i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = i << shift;
  return t;
}
constexpr auto kT0 = make_table(18);
constexpr auto kT1 = make_table(12);
constexpr auto kT2 = make_table(6);
constexpr auto kT3 = make_table(0);

inline uint8_t u8(char c) { return static_cast<uint8_t>(c); }

Base64Result fail(size_t offset, const char* why) {
  Base64Result r;
  r.error_offset = offset;
  r.error = why;
  return r;
}

// The first character of in[q, q+4) that is not in the alphabet.
Base64Result bad_char(std::string_view in, size_t q) {
  for (size_t i = q; i < q + 4 && i < in.size(); ++i) {
    if (kT3[u8(in[i])] == kBad)
      return fail(i, in[i] == '=' ? "'=' padding before the end" : "character outside the base64 alphabet");
  }
  return fail(q, "invalid quantum");
}

}  // namespace

Base64Result base64_decode(std::string_view in, uint8_t* out, size_t out_capacity) {
  const size_t n = in.size();
  if (n == 0) {
    Base64Result r;
    r.ok = true;
    return r;
  }
  if (n % 4 != 0) return fail(n - n % 4, "length is not a multiple of 4");
  if (out_capacity < base64_max_decoded_size(n)) return fail(0, "output buffer too small");

  // All quanta but the last cannot hold padding.
  const size_t full = n - 4;
  const char* p = in.data();
  uint8_t* o = out;
  for (size_t q = 0; q < full; q += 4) {
    uint32_t x = kT0[u8(p[q])] | kT1[u8(p[q + 1])] | kT2[u8(p[q + 2])] | kT3[u8(p[q + 3])];
    if (x & kBad) [[unlikely]] return bad_char(in, q);
    o[0] = static_cast<uint8_t>(x >> 16);
    o[1] = static_cast<uint8_t>(x >> 8);
    o[2] = static_cast<uint8_t>(x);
    o += 3;
  }

  const char* l = p + full;
  int pad = (l[3] == '=') + (l[3] == '=' && l[2] == '=');
  uint32_t x = kT0[u8(l[0])] | kT1[u8(l[1])];
  if (pad < 2) x |= kT2[u8(l[2])];
  if (pad < 1) x |= kT3[u8(l[3])];
  if (x & kBad) return bad_char(in.substr(0, full + 4 - pad), full);
  if (pad == 2) {
    if (x & 0xF000) return fail(full + 1, "non-zero bits before '==' padding (not canonical)");
    *o++ = static_cast<uint8_t>(x >> 16);
  } else if (pad == 1) {
    if (x & 0xC0) return fail(full + 2, "non-zero bits before '=' padding (not canonical)");
    *o++ = static_cast<uint8_t>(x >> 16);
    *o++ = static_cast<uint8_t>(x >> 8);
  } else {
    *o++ = static_cast<uint8_t>(x >> 16);
    *o++ = static_cast<uint8_t>(x >> 8);
    *o++ = static_cast<uint8_t>(x);
  }
  Base64Result r;
  r.ok = true;
  r.size = static_cast<size_t>(o - out);
  return r;
}

std::string base64_decode(std::string_view in) {
  std::string out(base64_max_decoded_size(in.size()), '\0');
  Base64Result r = base64_decode(in, reinterpret_cast<uint8_t*>(out.data()), out.size());
  if (!r.ok) throw FormatError(str("invalid base64 at offset ", r.error_offset, ": ", r.error));
  out.resize(r.size);
  return out;
}

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve(base64_encoded_size(in.size()));
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(u8(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t x = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[x >> 18];
    out += kAlphabet[(x >> 12) & 63];
    out += kAlphabet[(x >> 6) & 63];
    out += kAlphabet[x & 63];
  }
  if (size_t rest = in.size() - i; rest > 0) {
    uint32_t x = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[x >> 18];
    out += kAlphabet[(x >> 12) & 63];
    out += rest == 2 ? kAlphabet[(x >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace fastnn
