// Example codec against libprotobuf 3.21 (tensorflow::Example from schemas/), the oracle:
// random Examples serialized by libprotobuf, the same Examples in unusual but valid encodings
// written by hand, the builder's bytes, random mutations of valid records, the recursion limit at
// every message level, and the UTF-8 check on keys. tests/fuzz/example_oracle.h does the comparing.
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/example.h"
#include "core/protowire.h"
#include "tests/fuzz/example_oracle.h"
#include "tests/unit/core/example_wire.h"

namespace fastnn {
namespace {

using namespace wire;
using oracle::check_against_libprotobuf;
using oracle::deterministic_bytes;

struct Quiet : ::testing::Environment {
  void SetUp() override { google::protobuf::SetLogHandler(nullptr); }  // rejected UTF-8 keys are logged
};
const auto* const kQuiet = ::testing::AddGlobalTestEnvironment(new Quiet);

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  uint64_t below(uint64_t n) { return g() % n; }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
};

const std::vector<std::string> kKeyPool = {
    keys::kImageEncoded, keys::kImageFormat, keys::kLabel, keys::kHeight, keys::kWidth, keys::kChannels,
    "", "a", "b", "ab", "x/y", "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", std::string(40, 'k')};

std::string random_key(Rng& r) {
  if (r.coin(0.2)) return "k" + std::to_string(r.below(1000));
  return kKeyPool[r.below(kKeyPool.size())];
}

int64_t random_int64(Rng& r) {
  switch (r.below(5)) {
    case 0: return static_cast<int64_t>(r.below(128));
    case 1: return -static_cast<int64_t>(r.below(1000));
    case 2: return r.coin(0.5) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    default: return static_cast<int64_t>(r.g());
  }
}

float random_float(Rng& r) {
  if (r.coin(0.5)) return std::bit_cast<float>(static_cast<uint32_t>(r.g()));  // any bits, NaNs included
  const float special[] = {0.0f, -0.0f, 1.0f, -2.5f, 1e-45f, 3.4e38f, std::numeric_limits<float>::infinity()};
  return special[r.below(7)];
}

std::string random_bytes(Rng& r) {
  size_t n = r.coin(0.05) ? 300 : r.below(12);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(r.g());
  return s;
}

size_t random_count(Rng& r) { return r.coin(0.05) ? 40 : r.below(5); }

void fill_random_feature(Rng& r, tensorflow::Feature* f, bool allow_empty_kind) {
  switch (r.below(allow_empty_kind ? 4 : 3)) {
    case 0: {
      auto* l = f->mutable_bytes_list();
      for (size_t n = random_count(r); n > 0; --n) l->add_value(random_bytes(r));
      break;
    }
    case 1: {
      auto* l = f->mutable_float_list();
      for (size_t n = random_count(r); n > 0; --n) l->add_value(random_float(r));
      break;
    }
    case 2: {
      auto* l = f->mutable_int64_list();
      for (size_t n = random_count(r); n > 0; --n) l->add_value(random_int64(r));
      break;
    }
    default: break;  // no list set
  }
}

tensorflow::Example random_example(Rng& r, bool allow_empty_kind = true) {
  tensorflow::Example ex;
  if (r.coin(0.03)) return ex;  // no features field at all
  auto* map = ex.mutable_features()->mutable_feature();
  for (size_t n = r.below(9); n > 0; --n) fill_random_feature(r, &(*map)[random_key(r)], allow_empty_kind);
  return ex;
}

// ---- the same message in unusual but valid encodings ----

class Scrambler {
 public:
  explicit Scrambler(Rng& r) : r_(r) {}

  std::string example(const tensorflow::Example& ex) {
    std::vector<std::string> groups;  // per key: decoy entries, then the real one
    for (const auto& [key, feature] : ex.features().feature()) {
      std::string g;
      if (r_.coin(0.15)) {  // an earlier entry with the same key, replaced by the real one
        tensorflow::Feature decoy;
        fill_random_feature(r_, &decoy, true);
        g += len(1, entry(key, decoy));
      }
      groups.push_back(g + len(1, entry(key, feature)));
    }
    std::shuffle(groups.begin(), groups.end(), r_.g);
    std::vector<std::string> fields;
    if (ex.has_features()) {
      // Example.features split over several fields: their entries accumulate.
      size_t parts = r_.coin(0.2) ? 1 + r_.below(3) : 1;
      std::vector<std::string> features(parts);
      for (auto& g : groups) features[r_.below(parts)] += g + maybe_unknown({10});
      for (auto& f : features) fields.push_back(len(1, f));
    }
    return interleave_unknown(fields, {10});
  }

 private:
  std::string entry(const std::string& key, const tensorflow::Feature& f) {
    std::vector<std::string> key_fields;
    if (r_.coin(0.1)) key_fields.push_back(len(1, kKeyPool[r_.below(kKeyPool.size())]));  // overridden
    if (!key.empty() || !key_fields.empty() || r_.coin(0.5)) key_fields.push_back(len(1, key));  // "" may be left out
    std::vector<std::string> body = feature_fields(f);
    std::vector<std::string> value_fields;  // the Feature body cut into consecutive parts: they merge
    size_t parts = r_.coin(0.2) ? 1 + r_.below(3) : 1;
    if (body.empty() && r_.coin(0.5)) parts = 0;
    for (size_t i = 0, at = 0; i < parts; ++i) {
      size_t take = i + 1 == parts ? body.size() - at : r_.below(body.size() - at + 1);
      std::string part;
      for (size_t j = 0; j < take; ++j) part += body[at + j];
      at += take;
      value_fields.push_back(len(2, part));
    }
    // Key and value fields in either order; the order among key fields and among value fields kept.
    std::vector<std::string> fields;
    size_t k = 0, v = 0;
    while (k < key_fields.size() || v < value_fields.size()) {
      bool take_key = v == value_fields.size() || (k < key_fields.size() && r_.coin(0.5));
      fields.push_back(take_key ? key_fields[k++] : value_fields[v++]);
    }
    return interleave_unknown(fields, {10, 18});
  }

  std::vector<std::string> feature_fields(const tensorflow::Feature& f) {
    std::vector<std::string> fields;
    if (f.kind_case() != tensorflow::Feature::KIND_NOT_SET && r_.coin(0.2)) {
      // Lists replaced by a later list of another kind (oneof): same kind, then another kind.
      tensorflow::Feature junk;
      if (r_.coin(0.5)) {
        junk.CopyFrom(f);
        fields.push_back(list_field(junk, 1));
      }
      do {
        junk.Clear();
        fill_random_feature(r_, &junk, false);
      } while (junk.kind_case() == f.kind_case());
      fields.push_back(list_field(junk, 1));
    }
    if (f.kind_case() != tensorflow::Feature::KIND_NOT_SET) {
      size_t segments = r_.coin(0.2) ? 2 + r_.below(2) : 1;  // same kind repeated: values append
      for (size_t s = 0; s < segments; ++s) fields.push_back(list_field(f, segments, s));
    }
    std::vector<std::string> out;
    for (auto& field : fields) {
      if (r_.coin(0.2)) out.push_back(unknown({10, 18, 26}, 2));
      out.push_back(field);
    }
    if (r_.coin(0.2)) out.push_back(unknown({10, 18, 26}, 2));
    return out;
  }

  // Part `s` of `segments` of f's list (values split evenly), as a Feature field.
  std::string list_field(const tensorflow::Feature& f, size_t segments, size_t s = 0) {
    std::vector<std::string> fields;
    auto range = [&](int n) { return std::pair<int, int>(static_cast<int>(n * s / segments), static_cast<int>(n * (s + 1) / segments)); };
    switch (f.kind_case()) {
      case tensorflow::Feature::kBytesList: {
        auto [b, e] = range(f.bytes_list().value_size());
        for (int i = b; i < e; ++i) fields.push_back(len(1, f.bytes_list().value(i)));
        return len(1, interleave_unknown(fields, {10}));
      }
      case tensorflow::Feature::kFloatList: {
        auto [b, e] = range(f.float_list().value_size());
        for (int i = b; i < e;) {
          int run = 1 + static_cast<int>(r_.below(static_cast<uint64_t>(e - i)));
          if (r_.coin(0.5)) {
            std::string packed;
            for (int j = i; j < i + run; ++j) packed += wire::packed_floats({f.float_list().value(j)});
            fields.push_back(len(1, packed));
          } else {
            for (int j = i; j < i + run; ++j) {
              uint32_t bits = float_bits(f.float_list().value(j));
              std::string v = tag(1, kFixed32, tag_extra());
              for (int b2 = 0; b2 < 4; ++b2) v.push_back(static_cast<char>(bits >> (8 * b2)));
              fields.push_back(v);
            }
          }
          i += run;
        }
        if (r_.coin(0.1)) fields.push_back(len(1, ""));  // an empty packed field adds nothing
        return len(2, interleave_unknown(fields, {10, 13}));
      }
      case tensorflow::Feature::kInt64List: {
        auto [b, e] = range(f.int64_list().value_size());
        for (int i = b; i < e;) {
          int run = 1 + static_cast<int>(r_.below(static_cast<uint64_t>(e - i)));
          bool packed = r_.coin(0.5);
          std::string p;
          for (int j = i; j < i + run; ++j) {
            uint64_t v = static_cast<uint64_t>(f.int64_list().value(j));
            std::string enc = varint(v, static_cast<int>(r_.below(10 - (std::bit_width(v | 1) + 6) / 7 + 1)));
            if (packed) {
              p += enc;
            } else {
              fields.push_back(tag(1, kVarint, tag_extra()) + enc);
            }
          }
          if (packed) fields.push_back(len(1, p));
          i += run;
        }
        if (r_.coin(0.1)) fields.push_back(len(1, ""));
        return len(3, interleave_unknown(fields, {10, 8}));
      }
      default: return "";
    }
  }

  // A length-delimited field with randomly overlong (but valid: tag <= 5, length <= 5 bytes) prefixes.
  std::string len(uint32_t field, std::string_view payload) {
    int len_size = static_cast<int>((std::bit_width(payload.size() | 1) + 6) / 7);
    int extra = r_.coin(0.1) ? static_cast<int>(r_.below(static_cast<uint64_t>(5 - len_size + 1))) : 0;
    return tag(field, kLen, tag_extra()) + varint(payload.size(), extra) + std::string(payload);
  }
  int tag_extra() { return r_.coin(0.1) ? static_cast<int>(r_.below(4)) : 0; }

  // An unknown field (any wire type, groups nested up to `depth`) whose tag is none of `known`.
  std::string unknown(std::initializer_list<uint32_t> known, int depth) {
    static const uint32_t kFields[] = {1, 2, 3, 4, 5, 15, 16, 2047, 2048, 536870911};
    for (;;) {
      uint32_t field = kFields[r_.below(10)];
      uint32_t type = static_cast<uint32_t>(r_.below(6));
      if (type == kEndGroup || (type == kStartGroup && depth == 0)) continue;
      uint32_t t = field << 3 | type;
      if (std::find(known.begin(), known.end(), t) != known.end()) continue;
      std::string out = tag(field, type, r_.below(4) == 0 && field < 16 ? 1 : 0);
      switch (type) {
        case kVarint: out += varint(r_.g() >> r_.below(64)); break;
        case kFixed64: out += std::string(8, static_cast<char>(r_.g())); break;
        case kLen: out += varint(3) + "abc"; break;
        case kFixed32: out += std::string(4, static_cast<char>(r_.g())); break;
        case kStartGroup: {
          for (size_t n = r_.below(3); n > 0; --n) out += unknown({}, depth - 1);
          out += tag(field, kEndGroup);
          break;
        }
      }
      return out;
    }
  }
  std::string maybe_unknown(std::initializer_list<uint32_t> known) { return r_.coin(0.2) ? unknown(known, 2) : ""; }
  std::string interleave_unknown(const std::vector<std::string>& fields, std::initializer_list<uint32_t> known) {
    std::string out = maybe_unknown(known);
    for (const auto& f : fields) out += f + maybe_unknown(known);
    return out;
  }

  Rng& r_;
};

ExampleParser standard_parser() {
  std::vector<std::string> keys(kKeyPool.begin(), kKeyPool.end());
  keys.push_back("never-present");
  return ExampleParser(keys);
}

TEST(ExampleDifferential, LibprotobufSerializedExamples) {
  Rng r(1);
  ExampleParser parser = standard_parser();
  for (int i = 0; i < 1500; ++i) {
    tensorflow::Example ex = random_example(r);
    std::string bytes = ex.SerializeAsString();
    ASSERT_EQ(check_against_libprotobuf(bytes, parser), "") << "example " << i << ": " << ex.ShortDebugString();
  }
}

TEST(ExampleDifferential, UnusualEncodingsOfTheSameMessage) {
  Rng r(2);
  Scrambler scrambler(r);
  ExampleParser parser = standard_parser();
  for (int i = 0; i < 1500; ++i) {
    tensorflow::Example ex = random_example(r);
    std::string bytes = scrambler.example(ex);
    // The encoding is valid and means the same message to libprotobuf...
    tensorflow::Example back;
    ASSERT_TRUE(back.ParseFromString(bytes)) << i;
    back.DiscardUnknownFields();
    ASSERT_EQ(deterministic_bytes(back), deterministic_bytes(ex)) << i;
    // ... and to us.
    ASSERT_EQ(check_against_libprotobuf(bytes, parser), "") << "example " << i << ": " << ex.ShortDebugString();
  }
}

TEST(ExampleDifferential, BuilderBytesAreLibprotobufsDeterministicSerialization) {
  Rng r(3);
  for (int i = 0; i < 1000; ++i) {
    tensorflow::Example ex = random_example(r, /*allow_empty_kind=*/false);
    ex.mutable_features();  // the builder always writes the Features field
    ExampleBuilder b;
    for (const auto& [key, f] : ex.features().feature()) {
      switch (f.kind_case()) {
        case tensorflow::Feature::kBytesList: {
          std::vector<std::string_view> v(f.bytes_list().value().begin(), f.bytes_list().value().end());
          b.add_bytes_list(key, v);
          break;
        }
        case tensorflow::Feature::kFloatList: {
          std::vector<float> v(f.float_list().value().begin(), f.float_list().value().end());
          if (v.size() == 1 && r.coin(0.5)) b.add_float(key, v[0]); else b.add_float_list(key, v);
          break;
        }
        default: {
          std::vector<int64_t> v(f.int64_list().value().begin(), f.int64_list().value().end());
          if (v.size() == 1 && r.coin(0.5)) b.add_int64(key, v[0]); else b.add_int64_list(key, v);
          break;
        }
      }
    }
    std::string bytes = b.serialize();
    ASSERT_EQ(bytes, deterministic_bytes(ex)) << ex.ShortDebugString();
    tensorflow::Example back;
    ASSERT_TRUE(back.ParseFromString(bytes));
    ASSERT_EQ(deterministic_bytes(back), deterministic_bytes(ex));
  }
}

std::string mutate(std::string s, Rng& r, const std::vector<std::string>& others) {
  if (s.empty()) return std::string(1, static_cast<char>(r.g()));
  size_t pos = r.below(s.size());
  switch (r.below(8)) {
    case 0: s[pos] = static_cast<char>(s[pos] ^ (1 << r.below(8))); break;
    case 1: s.resize(pos); break;
    case 2: s.insert(pos, 1, static_cast<char>(r.g())); break;
    case 3: s.erase(pos, 1 + r.below(4)); break;
    case 4: {  // duplicate a slice: repeated fields, entries and lists
      size_t n = 1 + r.below(std::min<size_t>(s.size() - pos, 40));
      s.insert(r.below(s.size() + 1), s.substr(pos, n));
      break;
    }
    case 5: s[pos] = "\x00\x80\xff\x7f\x0c\x0b"[r.below(6)]; break;
    case 6: {
      const std::string& o = others[r.below(others.size())];
      s = s.substr(0, pos) + o.substr(std::min(o.size(), r.below(o.size() + 1)));
      break;
    }
    default: s[pos] = static_cast<char>(r.g()); break;
  }
  return s;
}

TEST(ExampleDifferential, MutatedRecordsAcceptedAndReadAlikeByBoth) {
  Rng r(4);
  Scrambler scrambler(r);
  ExampleParser parser = standard_parser();
  std::vector<std::string> seeds;
  for (int i = 0; i < 150; ++i) seeds.push_back(random_example(r).SerializeAsString());
  for (int i = 0; i < 150; ++i) seeds.push_back(scrambler.example(random_example(r)));
  size_t accepted = 0, total = 0;
  for (const auto& seed : seeds) {
    std::string cur = seed;
    for (int m = 0; m < 60; ++m) {
      cur = (m % 3 == 0) ? mutate(seed, r, seeds) : mutate(cur, r, seeds);
      ASSERT_EQ(check_against_libprotobuf(cur, parser), "") << "input " << ::testing::PrintToString(cur);
      tensorflow::Example ex;
      accepted += ex.ParseFromString(cur);
      ++total;
    }
  }
  // Both outcomes are exercised plentifully.
  EXPECT_GT(accepted, total / 20);
  EXPECT_LT(accepted, total * 19 / 20);
  std::printf("%zu of %zu mutated records valid\n", accepted, total);
}

TEST(ExampleDifferential, RecursionLimitAtEveryMessageLevel) {
  auto nested = [](int n) {
    std::string g;
    for (int i = 0; i < n; ++i) g = group_field(9, varint_field(1, 1) + g);
    return g;
  };
  // level -> record with n nested groups at that message level
  std::vector<std::pair<int, std::function<std::string(int)>>> levels = {
      {0, [&](int n) { return wire::example({entry("k", int64_feature(""))}) + nested(n); }},
      {1, [&](int n) { return len_field(1, len_field(1, entry("k", "")) + nested(n)); }},
      {2, [&](int n) { return wire::example({entry("k", int64_feature("")) + nested(n)}); }},
      {3, [&](int n) { return wire::example({entry("k", int64_feature("") + nested(n))}); }},
      {4, [&](int n) { return wire::example({entry("k", int64_feature(nested(n)))}); }},
      {4, [&](int n) { return wire::example({entry("k", float_feature(nested(n)))}); }},
      {4, [&](int n) { return wire::example({entry("k", bytes_feature(nested(n)))}); }},
  };
  ExampleParser parser = standard_parser();
  for (const auto& [level, make] : levels) {
    int limit = protowire::kRecursionLimit - level;
    for (int n : {limit - 1, limit, limit + 1}) {
      std::string rec = make(n);
      tensorflow::Example ex;
      EXPECT_EQ(ex.ParseFromString(rec), n <= limit) << "level " << level << " depth " << n;
      EXPECT_EQ(check_against_libprotobuf(rec, parser), "") << "level " << level << " depth " << n;
    }
  }
}

TEST(ExampleDifferential, InvalidUtf8KeysRejectedByBoth) {
  ExampleParser parser = standard_parser();
  for (std::string key : {std::string("\xff"), std::string("a\xc3"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80")}) {
    std::string rec = wire::example({entry("ok", ""), entry(key, int64_feature(""))});
    tensorflow::Example ex;
    EXPECT_FALSE(ex.ParseFromString(rec));
    EXPECT_EQ(check_against_libprotobuf(rec, parser), "");
  }
}

TEST(ExampleDifferential, Utf8CheckMatchesLibprotobuf) {
  auto same = [](std::string_view s) {
    return protowire::valid_utf8(s) == google::protobuf::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
  };
  std::string s;
  for (int a = 0; a < 256; ++a) {
    s.assign(1, static_cast<char>(a));
    ASSERT_TRUE(same(s)) << a;
    for (int b = 0; b < 256; ++b) {
      s.assign({static_cast<char>(a), static_cast<char>(b)});
      ASSERT_TRUE(same(s)) << a << " " << b;
      if (a < 0xc0) continue;
      for (int c = 0; c < 256; ++c) {
        s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
        ASSERT_TRUE(same(s)) << a << " " << b << " " << c;
      }
    }
  }
  Rng r(5);
  const unsigned char alphabet[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
                                    0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf8, 0xff};
  for (int i = 0; i < 200000; ++i) {
    s.assign(4 + r.below(24), '\0');  // past 8 bytes the check goes a word at a time
    bool mostly_ascii = r.coin(0.5);
    for (auto& c : s)
      c = static_cast<char>(mostly_ascii && r.coin(0.9) ? 'a' : alphabet[r.below(sizeof(alphabet))]);
    ASSERT_TRUE(same(s)) << ::testing::PrintToString(s);
  }
  // Valid text of code points near every boundary, sometimes with one byte changed.
  const uint32_t cps[] = {0x24, 0x7f, 0x80, 0x7ff, 0x800, 0xfff, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x10ffff};
  auto encode = [](uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | cp >> 6));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | cp >> 12));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | cp >> 18));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  };
  size_t valid = 0;
  for (int i = 0; i < 50000; ++i) {
    s.clear();
    for (size_t n = 1 + r.below(12); n > 0; --n) encode(cps[r.below(std::size(cps))], &s);
    if (r.coin(0.5)) s[r.below(s.size())] = static_cast<char>(alphabet[r.below(sizeof(alphabet))]);
    ASSERT_TRUE(same(s)) << ::testing::PrintToString(s);
    valid += protowire::valid_utf8(s);
  }
  EXPECT_GT(valid, 25000u);
}

}  // namespace
}  // namespace fastnn
