// core/base64: RFC 4648 §10 vectors, round trips, strictness, and a differential test against a
// deliberately simple bit-by-bit reference decoder.
#include "core/base64.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "core/check.h"

namespace fastnn {
namespace {

const char* kAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Reference: strict canonical decoding, one bit at a time.
std::optional<std::string> reference_decode(const std::string& in) {
  if (in.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  std::string bits;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    const char* p = std::strchr(kAlpha, in[i]);
    if (in[i] == '\0' || p == nullptr) return std::nullopt;
    int v = static_cast<int>(p - kAlpha);
    for (int b = 5; b >= 0; --b) bits += ((v >> b) & 1) ? '1' : '0';
  }
  if (pad > 0 && (in.size() - pad) % 4 < 2) return std::nullopt;
  size_t keep = bits.size() / 8 * 8;
  for (size_t i = keep; i < bits.size(); ++i)
    if (bits[i] != '0') return std::nullopt;  // not canonical
  std::string out;
  for (size_t i = 0; i < keep; i += 8) out += static_cast<char>(std::stoi(bits.substr(i, 8), nullptr, 2));
  return out;
}

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> v[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                   {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                   {"foobar", "Zm9vYmFy"}};
  for (auto [plain, enc] : v) {
    EXPECT_EQ(base64_encode(plain), enc);
    EXPECT_EQ(base64_decode(std::string_view(enc)), plain);
  }
}

TEST(Base64, RoundTripAllLengths) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 300; ++n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    std::string e = base64_encode(s);
    EXPECT_EQ(e.size(), base64_encoded_size(n));
    EXPECT_EQ(base64_decode(std::string_view(e)), s) << n;
  }
}

TEST(Base64, RejectsWithOffsets) {
  struct Case {
    const char* in;
    size_t offset;
  };
  const Case cases[] = {
      {"Zm9", 0},           // length not a multiple of 4 (first incomplete quantum)
      {"Zm9vYmF", 4},       //
      {"Zm9v!mFy", 4},      // character outside the alphabet
      {"Zm9vYmF\n", 7},     // whitespace is not skipped
      {"Zm=vYmFy", 2},      // padding in the middle
      {"Zg==Zg==", 2},      // padding before the last quantum
      {"Z===", 1},          // three padding characters
      {"Zh==", 1},          // non-zero bits under "==" (not canonical)
      {"Zm9=", 2},          // non-zero bits under "="
      {"Zm9v-_==", 4},      // URL-safe alphabet
      {"====", 0},
  };
  for (const Case& c : cases) {
    std::string in = c.in;
    std::string out(base64_max_decoded_size(in.size()) + 3, '\0');
    Base64Result r = base64_decode(in, reinterpret_cast<uint8_t*>(out.data()), out.size());
    EXPECT_FALSE(r.ok) << in;
    EXPECT_EQ(r.error_offset, c.offset) << in << ": " << r.error;
    EXPECT_FALSE(reference_decode(in).has_value()) << in;
  }
  try {
    base64_decode(std::string_view("Zm9v!mFy"));
    FAIL() << "no exception";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("offset 4"), std::string::npos) << e.what();
  }
}

TEST(Base64, SmallOutputBufferIsAnErrorNotAnOverflow) {
  uint8_t out[2];
  Base64Result r = base64_decode("Zm9v", out, sizeof out);
  EXPECT_FALSE(r.ok);
}

TEST(Base64, DifferentialAgainstReference) {
  std::mt19937 rng(42);
  const std::string chars = std::string(kAlpha) + "=-_ \n\t*";
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string in;
    if (iter % 2 == 0) {
      // A valid encoding, possibly mutated in one place.
      std::string plain(rng() % 40, '\0');
      for (char& c : plain) c = static_cast<char>(rng());
      in = base64_encode(plain);
      if (!in.empty() && rng() % 2) in[rng() % in.size()] = chars[rng() % chars.size()];
    } else {
      in.resize(4 * (rng() % 5));
      for (char& c : in) c = chars[rng() % chars.size()];
    }
    std::optional<std::string> want = reference_decode(in);
    std::string out(base64_max_decoded_size(in.size()), '\0');
    Base64Result got = base64_decode(in, reinterpret_cast<uint8_t*>(out.data()), out.size());
    ASSERT_EQ(got.ok, want.has_value()) << "\"" << in << "\"";
    if (got.ok) {
      ++accepted;
      out.resize(got.size);
      ASSERT_EQ(out, *want) << in;
    }
  }
  EXPECT_GT(accepted, 5000);  // the mix exercises both outcomes
}

}  // namespace
}  // namespace fastnn
