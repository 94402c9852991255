// Names are bytes (core/name_escape.h): any byte sequence round-trips through the escaped form,
// through manifest.json and through labels.txt; printable UTF-8 is left as it is.
#include "core/name_escape.h"

#include <gtest/gtest.h>

#include <random>

#include "core/check.h"
#include "core/manifest.h"

namespace fastnn {
namespace {

TEST(NameEscape, PlainNamesUnchanged) {
  for (std::string s : {"cat", "n01440764", "grüße", "猫", "a b.c-d_e", "emoji \xF0\x9F\x98\x80"}) {
    EXPECT_TRUE(is_plain_name(s)) << s;
    EXPECT_EQ(escape_name(s), s);
    EXPECT_EQ(unescape_name(s), s);
  }
}

TEST(NameEscape, BytesAndControlsEscaped) {
  EXPECT_EQ(escape_name("cat\xff"), "cat\\xFF");
  EXPECT_EQ(escape_name("dog\nx"), "dog\\x0Ax");
  EXPECT_EQ(escape_name("a\\b"), "a\\x5Cb");
  EXPECT_EQ(escape_name("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a UTF-16 surrogate is not UTF-8
  EXPECT_EQ(escape_name("\xC0\xAF"), "\\xC0\\xAF");           // overlong
  EXPECT_EQ(unescape_name("a\\b\\x4"), "a\\b\\x4");           // literal backslashes stay
  EXPECT_FALSE(is_plain_name("tab\there"));
}

TEST(NameEscape, RandomBytesRoundTrip) {
  std::mt19937 rng(7);
  for (int t = 0; t < 2000; ++t) {
    std::string s(rng() % 12, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? "\\x\n\xff"[rng() % 4] : rng());
    const std::string e = escape_name(s);
    EXPECT_TRUE(is_plain_name(e) || e.find('\\') != std::string::npos);
    for (char c : e) EXPECT_FALSE(c == '\n' || c == '\r' || c == '\0');
    EXPECT_EQ(unescape_name(e), s);
  }
}

TEST(NameEscape, ManifestAndLabelsRoundTrip) {
  Manifest m;
  m.dataset = "image-folder";
  m.class_names = {"cat\xff", "dog\nx", "back\\slash", "plain", "1:looks like an id"};
  m.inputs = {"/data/\xfe\xfd"};
  SplitInfo s;
  s.name = "train";
  s.shards.push_back({shard_file_name("train", 0, 1), 1, 10, {1, 0, 0, 0, 0}});
  s.num_records = 1;
  s.num_source_samples = 2;
  s.label_histogram = {1, 0, 0, 0, 0};
  s.skipped.push_back({"/data/cat\xff/x\n.png", "a dangling symbolic link"});
  m.splits.push_back(s);
  Manifest back = parse_manifest(serialize_manifest(m));
  EXPECT_EQ(back.class_names, m.class_names);
  EXPECT_EQ(back.inputs, m.inputs);
  EXPECT_EQ(back.splits[0].skipped[0].source, s.skipped[0].source);

  const std::string labels = format_labels_txt(m.class_names);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), '\n'), 5);  // one line per class, newline escaped
  EXPECT_EQ(parse_labels_txt(labels, "labels.txt"), m.class_names);
}

TEST(NameEscape, EmptyClassNamesFileIsAnError) {
  try {
    parse_labels_txt("\n  \n", "names.txt");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("names.txt"), std::string::npos);
  }
}

}  // namespace
}  // namespace fastnn
