// Example codec: known-answer bytes for the builder, and the parser on hand-written encodings (every
// form protobuf allows, and every kind of malformed input). Differential tests against libprotobuf
// are in example_differential_test.cpp.
#include "core/example.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/unit/core/example_wire.h"

// Counts heap allocations, to check that parse() makes none. (GCC cannot see that these replace
// the global operators and warns that malloc'd memory meets operator delete.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static std::atomic<long> g_allocations{0};
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace fastnn {
namespace {

using namespace wire;
using Kind = FeatureView::Kind;

std::string hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

// Parses `record` for one key.
FeatureView one(std::string_view record, const std::string& key) {
  ExampleParser p({key});
  FeatureView v;
  p.parse(record, std::span<FeatureView>(&v, 1));
  return v;
}

void expect_format_error(std::string_view record, const std::string& message_part) {
  ExampleParser p({"a"});
  FeatureView v;
  try {
    p.parse(record, std::span<FeatureView>(&v, 1));
    ADD_FAILURE() << "no FormatError for " << hex(record);
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at byte"), std::string::npos) << e.what();
  }
  EXPECT_THROW(for_each_feature(record, [](std::string_view, const FeatureView&) {}), FormatError);
}

// ---- builder: bytes derived by hand from the protobuf encoding spec ----

TEST(ExampleBuilder, SingleInt64KnownBytes) {
  // Example{features{feature{key:"a" value{int64_list{value:1}}}}}
  std::string bytes = ExampleBuilder().add_int64("a", 1).serialize();
  EXPECT_EQ(hex(bytes), "0a0c" "0a0a" "0a0161" "1205" "1a03" "0a0101");
}

TEST(ExampleBuilder, KeysSortedBytesAndFloatKnownBytes) {
  ExampleBuilder b;
  b.add_float("f", 1.0f).add_bytes("b", "xy");
  EXPECT_EQ(hex(b.serialize()), "0a1c"
                                "0a0b" "0a0162" "1206" "0a04" "0a027879"        // "b": bytes_list{"xy"}
                                "0a0d" "0a0166" "1208" "1206" "0a040000803f");  // "f": float_list{1.0}
}

TEST(ExampleBuilder, NegativeInt64IsTenByteVarint) {
  std::string bytes = ExampleBuilder().add_int64("n", -1).serialize();
  EXPECT_EQ(hex(bytes), "0a15" "0a13" "0a016e" "120e" "1a0c" "0a0a" "ffffffffffffffffff01");
}

TEST(ExampleBuilder, EmptyListsArePresentButEmpty) {
  ExampleBuilder b;
  b.add_int64_list("i", {}).add_float_list("f", {}).add_bytes_list("b", {});
  // Each Feature is its list field with a zero-length message: 1a00 / 1200 / 0a00.
  EXPECT_EQ(hex(b.serialize()), "0a1b" "0a07" "0a0162" "12020a00" "0a07" "0a0166" "12021200" "0a07" "0a0169" "12021a00");
  EXPECT_EQ(hex(ExampleBuilder().serialize()), "0a00");
}

TEST(ExampleBuilder, RejectsDuplicateAndNonUtf8Keys) {
  ExampleBuilder b;
  b.add_int64("k", 1);
  EXPECT_THROW(b.add_bytes("k", "x"), Error);
  EXPECT_THROW(b.add_int64(std::string("\xff"), 1), Error);
  EXPECT_THROW(b.add_int64(std::string("\xc0\xaf"), 1), Error);  // overlong '/'
  // The failed adds left the builder as it was.
  EXPECT_EQ(b.serialize(), ExampleBuilder().add_int64("k", 1).serialize());
}

TEST(ExampleBuilder, ClearAndReuseAndSerializeToReplaces) {
  ExampleBuilder b;
  b.add_bytes("z", "1").add_bytes("a", "2").add_int64("m", 3);
  std::string first = b.serialize();
  b.clear();
  b.add_int64("m", 3).add_bytes("z", "1").add_bytes("a", "2");
  std::string out = "previous contents that must disappear";
  b.serialize_to(&out);
  EXPECT_EQ(out, first);
  b.clear();
  EXPECT_EQ(hex(b.serialize()), "0a00");
}

// ---- parser on builder output ----

TEST(ExampleParser, ReadsEveryKindAndReportsMissingKeys) {
  std::vector<std::string_view> strs = {"", "two", std::string_view("\0\xff", 2)};
  std::vector<int64_t> ints = {0, -1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 300};
  std::vector<float> floats = {0.5f, -0.0f, std::numeric_limits<float>::infinity(), 1e-45f};
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, "PNGDATA").add_int64(keys::kLabel, 7).add_float("score", 0.25f);
  b.add_bytes_list("strs", strs).add_int64_list("ints", ints).add_float_list("floats", floats);
  std::string rec = b.serialize();

  ExampleParser p({keys::kLabel, "absent", keys::kImageEncoded, "score", "strs", "ints", "floats", keys::kLabel});
  std::vector<FeatureView> out(p.keys().size());
  p.parse(rec, out);
  EXPECT_EQ(out[0].single_int64(keys::kLabel), 7);
  EXPECT_EQ(out[7].single_int64(keys::kLabel), 7);  // a key asked twice is found twice
  EXPECT_FALSE(out[1].present());
  EXPECT_EQ(out[1].kind(), Kind::kMissing);
  EXPECT_EQ(out[1].size(), 0u);
  EXPECT_EQ(out[2].single_bytes(keys::kImageEncoded), "PNGDATA");
  EXPECT_EQ(out[3].single_float("score"), 0.25f);
  EXPECT_EQ(out[4].bytes_values(), strs);
  EXPECT_EQ(out[5].int64_values(), ints);
  auto f = out[6].float_values();
  ASSERT_EQ(f.size(), floats.size());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(float_bits(f[i]), float_bits(floats[i]));
  EXPECT_EQ(out[4].size(), 3u);
  EXPECT_EQ(out[5].size(), 5u);
  EXPECT_EQ(out[6].size(), 4u);
  // Views point into the record: no copies.
  EXPECT_GE(out[2].single_bytes("").data(), rec.data());
  EXPECT_LT(out[2].single_bytes("").data(), rec.data() + rec.size());
}

TEST(ExampleParser, SingleValueAccessorsNameTheKey) {
  ExampleBuilder b;
  std::vector<int64_t> two = {1, 2};
  b.add_int64_list("two", two).add_int64_list("none", {}).add_bytes("bytes", "x");
  std::string rec = b.serialize();
  auto expect_error = [](auto fn, const std::string& part) {
    try {
      fn();
      ADD_FAILURE() << "no FormatError";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error([&] { one(rec, "two").single_int64("two"); }, "'two' has 2 values");
  expect_error([&] { one(rec, "none").single_int64("none"); }, "'none' has 0 values");
  expect_error([&] { one(rec, "bytes").single_int64("bytes"); }, "'bytes' is bytes_list");
  expect_error([&] { one(rec, "gone").single_bytes("gone"); }, "'gone' is missing");
  expect_error([&] { one(rec, "two").single_float("two"); }, "'two' is int64_list");
  EXPECT_THROW(one(rec, "bytes").int64_values(), FormatError);
  EXPECT_THROW(one(rec, "two").bytes_values(), FormatError);
  EXPECT_THROW(one(rec, "gone").float_values(), FormatError);
}

TEST(ExampleParser, ParseDoesNotAllocate) {
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, std::string(300, 'x')).add_int64(keys::kLabel, 3).add_int64(keys::kHeight, 28);
  std::string rec = b.serialize();
  ExampleParser p({keys::kImageEncoded, keys::kLabel, keys::kHeight, "absent"});
  std::vector<FeatureView> out(p.keys().size());
  long before = g_allocations.load();
  int64_t sum = 0;
  for (int i = 0; i < 100; ++i) {
    p.parse(rec, out);
    sum += out[1].single_int64(keys::kLabel) + out[2].single_int64(keys::kHeight) +
           static_cast<int64_t>(out[0].single_bytes(keys::kImageEncoded).size());
  }
  EXPECT_EQ(g_allocations.load() - before, 0);
  EXPECT_EQ(sum, 100 * (3 + 28 + 300));
}

TEST(ExampleParser, WrongOutputCountIsAnError) {
  ExampleParser p({"a", "b"});
  std::vector<FeatureView> out(1);
  EXPECT_THROW(p.parse(example({}), out), Error);
}

// ---- parser on hand-written valid encodings ----

TEST(ExampleParser, EmptyRecordsHaveNoFeatures) {
  EXPECT_FALSE(one("", "a").present());
  EXPECT_FALSE(one(unhex("0a00"), "a").present());
  EXPECT_FALSE(one(example({entry("a", "")}), "a").present());  // a Feature with no list set
}

TEST(ExampleParser, UnpackedAndMixedScalars) {
  std::string ints = varint_field(1, 5) + len_field(1, packed_varints({6, -7})) + varint_field(1, uint64_t(-8));
  std::string floats = fixed32_field(1, float_bits(1.5f)) + len_field(1, packed_floats({2.5f, 3.5f}));
  std::string rec = example({entry("i", int64_feature(ints)), entry("f", float_feature(floats))});
  EXPECT_EQ(one(rec, "i").int64_values(), (std::vector<int64_t>{5, 6, -7, -8}));
  EXPECT_EQ(one(rec, "i").size(), 4u);
  EXPECT_EQ(one(rec, "f").float_values(), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(one(rec, "f").size(), 3u);
}

TEST(ExampleParser, OverlongButValidVarints) {
  // Tag 10 in 5 bytes, a length in 5 bytes, a value 1 in 10 bytes, a value whose 10th byte carries
  // bits past 64 (dropped, as libprotobuf does).
  std::string list = tag(1, kVarint, 4) + varint(1, 9) + tag(1, kVarint) + unhex("ffffffffffffffffff7f");
  std::string feature = tag(3, kLen) + varint(list.size(), 4) + list;
  std::string rec = example({tag(1, kLen, 4) + varint(1, 2) + "k" + len_field(2, feature)});
  EXPECT_EQ(one(rec, "k").int64_values(), (std::vector<int64_t>{1, -1}));
}

TEST(ExampleParser, FieldsInAnyOrderAndUnknownFieldsEverywhere) {
  auto unknown = [](uint32_t field) {
    return varint_field(field, 1) + fixed64_field(field + 1, 2) + len_field(field + 2, "junk") +
           group_field(field + 3, varint_field(1, 9) + group_field(2, len_field(3, "x"))) + fixed32_field(field + 4, 3);
  };
  // Known field numbers with another wire type are unknown fields too.
  std::string list = unknown(2) + fixed32_field(1, 0) + len_field(1, packed_varints({42})) + unknown(20);
  std::string feature = unknown(4) + int64_feature(list) + varint_field(3, 1) + unknown(100);
  std::string e = unknown(3) + len_field(2, feature) + varint_field(1, 5) + unknown(7) + len_field(1, "key");
  std::string features = unknown(2) + len_field(1, e) + varint_field(1, 1) + unknown(50);
  std::string rec = unknown(2) + len_field(1, features) + unknown(536870900) + fixed64_field(1, 0);
  EXPECT_EQ(one(rec, "key").single_int64("key"), 42);
}

TEST(ExampleParser, DuplicateKeysLastWins) {
  std::string rec = example({entry("k", int64_feature(len_field(1, packed_varints({1})))),
                             entry("other", bytes_feature(len_field(1, "o"))),
                             entry("k", bytes_feature(len_field(1, "last")))});
  EXPECT_EQ(one(rec, "k").single_bytes("k"), "last");
  // A later entry without a list replaces the earlier one too.
  std::string rec2 = example({entry("k", int64_feature("")), entry("k", "")});
  EXPECT_FALSE(one(rec2, "k").present());
  // The last key field of an entry is its key.
  std::string rec3 = example({len_field(1, "first") + len_field(2, int64_feature(len_field(1, packed_varints({3})))) + len_field(1, "k")});
  EXPECT_EQ(one(rec3, "k").single_int64("k"), 3);
  EXPECT_FALSE(one(rec3, "first").present());
  // Example.features repeated: the entries accumulate.
  std::string rec4 = example({entry("a", int64_feature(""))}) + example({entry("k", bytes_feature(len_field(1, "x")))});
  EXPECT_TRUE(one(rec4, "a").present());
  EXPECT_EQ(one(rec4, "k").single_bytes("k"), "x");
}

TEST(ExampleParser, OneofLastKindWinsAndSameKindMerges) {
  std::string i1 = int64_feature(len_field(1, packed_varints({1, 2})));
  std::string i2 = int64_feature(varint_field(1, 3));
  std::string b = bytes_feature(len_field(1, "b"));
  // Another kind replaces: only the last run of one kind counts.
  EXPECT_EQ(one(example({entry("k", i1 + b)}), "k").single_bytes("k"), "b");
  EXPECT_EQ(one(example({entry("k", i1 + b + i2)}), "k").int64_values(), (std::vector<int64_t>{3}));
  // The same kind again merges: repeated values append.
  std::string rec = example({entry("k", i1 + b + i2 + i1)});
  FeatureView merged = one(rec, "k");  // views point into rec
  EXPECT_TRUE(merged.is_split());
  EXPECT_EQ(merged.int64_values(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(merged.size(), 3u);
  EXPECT_THROW(merged.single_int64("k"), FormatError);
  // A map entry's value field repeated: the Feature bodies merge the same way.
  std::string e = len_field(1, "k") + len_field(2, i1) + len_field(2, b) + varint_field(7, 0) + len_field(2, i2) + len_field(2, i2);
  std::string rec2 = example({e});
  FeatureView v = one(rec2, "k");
  EXPECT_EQ(v.int64_values(), (std::vector<int64_t>{3, 3}));
  std::string bb = bytes_feature(len_field(1, "x") + len_field(1, "y")) + bytes_feature(len_field(1, "z"));
  EXPECT_EQ(one(example({entry("k", bb)}), "k").bytes_values(), (std::vector<std::string_view>{"x", "y", "z"}));
  std::string ff = float_feature(len_field(1, packed_floats({1.0f}))) + float_feature(fixed32_field(1, float_bits(2.0f)));
  EXPECT_EQ(one(example({entry("k", ff)}), "k").float_values(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(ExampleParser, GroupsNestUpToTheRecursionLimit) {
  auto nested = [](int n) {
    std::string g;
    for (int i = 0; i < n; ++i) g = group_field(5, g);
    return g;
  };
  // 100 group levels inside Example are fine, 101 are not (libprotobuf's limit; the differential test
  // checks every message level against libprotobuf itself).
  std::string good = example({entry("k", int64_feature(""))}) + nested(100);
  EXPECT_TRUE(one(good, "k").present());
  expect_format_error(example({entry("k", int64_feature(""))}) + nested(101), "recursion limit");
  expect_format_error(example({entry("k", int64_feature(nested(97)))}), "recursion limit");
}

// ---- malformed records ----

TEST(ExampleParser, MalformedRecordsThrowFormatError) {
  std::string good = example({entry("a", int64_feature(len_field(1, packed_varints({1}))))});
  expect_format_error(good.substr(0, good.size() - 1), "runs past the end");
  expect_format_error(unhex("0a05") + "abc", "length 5 runs past the end");
  expect_format_error(unhex("08ff"), "truncated varint");
  expect_format_error(unhex("08ffffffffffffffffffff01"), "varint longer than 10 bytes");
  expect_format_error(unhex("8a80808080800100"), "tag longer than 5 bytes");
  expect_format_error(unhex("0a8080808080"), "length longer than 5 bytes");
  expect_format_error(unhex("0a8080808008"), "2 GiB");
  expect_format_error(unhex("0aff"), "truncated length");
  expect_format_error(unhex("8a"), "truncated tag");
  expect_format_error(unhex("0e00"), "invalid wire type 6");
  expect_format_error(unhex("0f00"), "invalid wire type 7");
  expect_format_error(unhex("0000"), "field number 0");
  expect_format_error(unhex("0200"), "field number 0");
  expect_format_error(unhex("0c"), "end-group tag without");
  expect_format_error(group_field(5, "").substr(0, 1), "has no end tag");
  expect_format_error(tag(5, kStartGroup) + tag(6, kEndGroup), "end-group tag for field 6 inside group 5");
  expect_format_error(unhex("0d0000"), "runs past the end");  // fixed32 cut short
  expect_format_error(unhex("09000000"), "runs past the end");  // fixed64 cut short
  expect_format_error(example({entry("a", float_feature(len_field(1, "abc")))}), "packed float list of 3 bytes");
  expect_format_error(example({entry("a", int64_feature(len_field(1, "\x01\x80")))}), "truncated varint");
  expect_format_error(example({entry(std::string("\xe0\x80\x80"), "")}), "not valid UTF-8");
  // Lists of keys nobody asked for are validated too (libprotobuf would reject the record).
  expect_format_error(example({entry("zzz", int64_feature(len_field(1, "\xff")))}), "truncated varint");
}

TEST(ExampleParser, ErrorNamesTheByteOffset) {
  std::string rec = example({entry("a", int64_feature(""))});
  std::string bad = rec + unhex("0f");
  try {
    one(bad, "a");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("at byte " + std::to_string(rec.size())), std::string::npos) << e.what();
  }
}

// ---- for_each_feature ----

TEST(ForEachFeature, ReportsEveryEntryInWireOrder) {
  std::string rec = example({entry("b", bytes_feature(len_field(1, "1"))), entry("a", int64_feature("")),
                             entry("b", float_feature("")), entry("c", "")});
  std::vector<std::pair<std::string, Kind>> seen;
  for_each_feature(rec, [&](std::string_view k, const FeatureView& v) { seen.emplace_back(std::string(k), v.kind()); });
  std::vector<std::pair<std::string, Kind>> want = {
      {"b", Kind::kBytes}, {"a", Kind::kInt64}, {"b", Kind::kFloat}, {"c", Kind::kMissing}};
  EXPECT_EQ(seen, want);
}

TEST(ForEachFeature, ValidatesBeforeReporting) {
  std::string rec = example({entry("a", int64_feature(""))}) + unhex("08");
  int calls = 0;
  EXPECT_THROW(for_each_feature(rec, [&](std::string_view, const FeatureView&) { ++calls; }), FormatError);
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace fastnn
