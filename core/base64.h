// Base64 (RFC 4648 §4, the standard alphabet with '=' padding), strict.
//
// The decoder accepts exactly the canonical encoding: length a multiple of 4, only A-Z a-z 0-9 + /,
// '=' only as one or two final characters, and zero bits where padding leaves bits unused. No
// whitespace, no URL-safe alphabet, no missing padding: base64-TSV lines come from b64encode(), and a
// lenient decoder would turn a corrupt line into a silently different image.
//
// Speed: four pre-shifted lookup tables, one OR per 4 characters, validity checked on the combined
// word (the approach of modp_b64). Thread-safe, no allocation except in the std::string overloads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fastnn {

// Upper bound of the decoded size of `encoded_size` characters ((n / 4) * 3).
constexpr size_t base64_max_decoded_size(size_t encoded_size) { return encoded_size / 4 * 3; }
constexpr size_t base64_encoded_size(size_t size) { return (size + 2) / 3 * 4; }

struct Base64Result {
  bool ok = false;
  size_t size = 0;          // decoded bytes written (valid when ok)
  size_t error_offset = 0;  // offset of the first offending character in the input (when !ok)
  const char* error = "";   // what is wrong there (when !ok)
};

// Decodes into out[0, out_capacity). out_capacity must be at least base64_max_decoded_size(in.size())
// (checked: a smaller buffer is an error result, never an overflow).
Base64Result base64_decode(std::string_view in, uint8_t* out, size_t out_capacity);

// Allocating forms. base64_decode throws FormatError "invalid base64 at offset N: reason".
std::string base64_decode(std::string_view in);
std::string base64_encode(std::string_view in);

}  // namespace fastnn
