// base64-TSV conversion end to end: decoded image bytes pass through, labels and line numbers are
// right whatever the scan block size (lines straddling blocks), both column orders, CRLF and blank
// lines, bad lines named by file:line, inputs never modified.
#include "converters/base64_tsv.h"

#include <gtest/gtest.h>

#include <map>

#include "convert_test_util.h"
#include "core/base64.h"

namespace fastnn::converters {
namespace {

using namespace testing;

std::string image(int i) {
  std::vector<uint8_t> px(static_cast<size_t>(20 + i) * 16 * 3);
  for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<uint8_t>(k * 7 + i * 13);
  return i % 2 ? encode_png(px.data(), 20 + i, 16, 3) : encode_jpeg(px.data(), 20 + i, 16, 3, 80);
}

// n lines; returns bytes → label.
std::map<std::string, int> write_tsv(const std::string& path, int n, int first, bool label_first, bool crlf) {
  std::map<std::string, int> out;
  std::string text;
  for (int i = 0; i < n; ++i) {
    std::string img = image(first + i);
    int label = (first + i) % 5;
    out[img] = label;
    std::string b64 = base64_encode(img);
    text += label_first ? std::to_string(label) + "\t" + b64 : b64 + "\t" + std::to_string(label);
    text += crlf ? "\r\n" : "\n";
    if (i == 3) text += "\n";  // a blank line
  }
  write_file(path, text);
  return out;
}

ConvertResult convert_tsv(const std::vector<std::string>& files, const ConvertOptions& o, bool label_first = false,
                          int64_t num_classes = 0, size_t block = 8 << 20) {
  Base64TsvOptions bo;
  bo.files = files;
  bo.label_first = label_first;
  bo.num_classes = num_classes;
  bo.block_bytes = block;
  Base64TsvSource src(bo);
  return run_conversion(src, o);
}

TEST(Base64Tsv, EndToEndTwoFilesAnyBlockSize) {
  TempDir t;
  std::map<std::string, int> want = write_tsv(t / "a.tsv", 23, 0, false, false);
  std::map<std::string, int> b = write_tsv(t / "b.tsv", 11, 100, false, true);
  want.insert(b.begin(), b.end());
  std::string a_before = read_file(t / "a.tsv");
  std::map<std::string, std::string> reference;
  for (size_t block : {size_t{8} << 20, size_t{64}, size_t{1000}}) {
    std::string out = t / ("out" + std::to_string(block));
    ConvertResult r = convert_tsv({t / "a.tsv", t / "b.tsv"}, options_for(out, 2, 1, 9), false, 0, block);
    EXPECT_EQ(r.manifest.class_names.size(), 5u);  // largest label + 1
    const SplitInfo& s = *r.manifest.find_split("train");
    EXPECT_EQ(s.num_source_samples, 34u);
    EXPECT_EQ(s.ignored_files, 2u);  // the blank lines
    EXPECT_EQ(s.num_records, 34u);
    std::set<std::string> seen;
    for (const Record& rec : read_split(out, r.manifest, "train")) {
      auto it = want.find(rec.encoded);
      ASSERT_NE(it, want.end());
      EXPECT_EQ(rec.label, it->second);
      EXPECT_EQ(rec.width, read_image_info(rec.encoded).width);
      EXPECT_TRUE(seen.insert(rec.encoded).second);
    }
    EXPECT_EQ(seen.size(), 34u);
    // The scan block size changes nothing in the output.
    if (reference.empty()) reference = all_files(out);
    else EXPECT_EQ(all_files(out), reference) << block;
  }
  EXPECT_EQ(read_file(t / "a.tsv"), a_before);  // inputs are only read
}

TEST(Base64Tsv, LabelFirstAndNumClasses) {
  TempDir t;
  std::map<std::string, int> want = write_tsv(t / "a.tsv", 9, 0, true, false);
  ConvertResult r = convert_tsv({t / "a.tsv"}, options_for(t / "out", 1, 1), true, 7);
  EXPECT_EQ(r.manifest.class_names.size(), 7u);
  for (const Record& rec : read_split(t / "out", r.manifest, "train")) EXPECT_EQ(rec.label, want[rec.encoded]);
  // Labels above --num-classes are bad lines.
  expect_error([&] { convert_tsv({t / "a.tsv"}, options_for(t / "out2", 1, 1), true, 3); },
               {"a.tsv:4", "label 3 is outside 0..2"});
}

TEST(Base64Tsv, BadLines) {
  TempDir t;
  write_tsv(t / "good.tsv", 6, 0, false, false);
  std::string good = read_file(t / "good.tsv");
  // Lines: 1..4, blank 5, 6, 7. Corrupt line 3 in different ways.
  auto with_line3 = [&](const std::string& name, auto edit) {
    std::vector<std::string> lines;
    size_t p = 0;
    while (p < good.size()) {
      size_t e = good.find('\n', p);
      lines.push_back(good.substr(p, e - p));
      p = e + 1;
    }
    edit(lines[2]);
    std::string text;
    for (auto& l : lines) text += l + "\n";
    write_file(t / name, text);
    return t / name;
  };
  auto fails = [&](const std::string& file, std::initializer_list<std::string> needles) {
    expect_error([&] { convert_tsv({file}, options_for(file + ".out", 1, 1)); }, needles);
    EXPECT_EQ(names_except_lock(file + ".out"), std::set<std::string>{});
  };
  std::string f = with_line3("b64.tsv", [](std::string& l) { l[10] = '!'; });
  fails(f, {"b64.tsv:3", "invalid base64 at column 11"});
  ConvertOptions o = options_for(f + ".skip", 1, 1);
  o.skip_bad = true;
  ConvertResult r = convert_tsv({f}, o);
  const SplitInfo& s = *r.manifest.find_split("train");
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0].source, f + ":3");
  EXPECT_EQ(s.num_records, 5u);
  fails(with_line3("label.tsv", [](std::string& l) { l += "x"; }), {"label.tsv:3", "not a non-negative integer"});
  fails(with_line3("neg.tsv", [](std::string& l) { l = l.substr(0, l.rfind('\t')) + "\t-1"; }), {"neg.tsv:3", "\"-1\""});
  fails(with_line3("fields.tsv", [](std::string& l) { l += "\t3"; }), {"fields.tsv:3", "found 3"});
  // A file saved with a byte-order mark: said so, not "invalid base64 at column 262205".
  fails(with_line3("bom.tsv", [](std::string& l) { l = "\xEF\xBB\xBF" + l; }), {"bom.tsv:3", "byte-order mark"});
  fails(with_line3("notimg.tsv", [](std::string& l) { l = base64_encode("hello world") + "\t1"; }), {"notimg.tsv:3", "not a JPEG or PNG"});
  // A JPEG cut in half, correctly base64-encoded: truncated.
  std::vector<uint8_t> px(200 * 150 * 3);
  for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<uint8_t>((k * 2654435761u) >> 24);
  std::string img = encode_jpeg(px.data(), 200, 150, 3, 90);
  fails(with_line3("cut.tsv", [&](std::string& l) { l = base64_encode(img.substr(0, img.size() / 2)) + "\t1"; }),
        {"cut.tsv:3", "truncated"});
  // Too long a line.
  Base64TsvOptions bo;
  bo.files = {t / "good.tsv"};
  bo.max_line_bytes = 100;
  Base64TsvSource src(bo);
  expect_error([&] { run_conversion(src, options_for(t / "long", 1, 1)); }, {"good.tsv:1", "longer than the limit"});
}

TEST(Base64Tsv, ParseLabel) {
  int32_t l;
  std::string why;
  EXPECT_TRUE(parse_label("0", 10, &l, &why));
  EXPECT_EQ(l, 0);
  EXPECT_TRUE(parse_label("16777215", 16777215, &l, &why));
  for (const char* bad : {"", "+1", "-1", "1.0", " 1", "0x1", "1e3", "9999999999999"}) EXPECT_FALSE(parse_label(bad, 1 << 24, &l, &why)) << bad;
  EXPECT_FALSE(parse_label("10", 9, &l, &why));
  EXPECT_NE(why.find("outside 0..9"), std::string::npos);
}

}  // namespace
}  // namespace fastnn::converters

namespace fastnn::converters {
namespace {
using namespace testing;

// One outlier label must not silently make 16.7 M classes: refused naming its line and --num-classes;
// with --num-classes it is accepted as stated.
TEST(Base64Tsv, OutlierLabelMakingMostClassesEmptyIsRefused) {
  TempDir t;
  write_tsv(t / "a.tsv", 6, 0, false, false);
  std::string text;
  {
    std::ifstream in(t / "a.tsv");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  text += base64_encode(image(1)) + "\t16000000\n";
  write_file(t / "a.tsv", text);
  expect_error([&] { convert_tsv({t / "a.tsv"}, options_for(t / "out", 1, 1)); },
               {"a.tsv:8", "16000001 classes", "--num-classes"});
  EXPECT_FALSE(fs::exists(t / "out/manifest.json"));
  Base64TsvOptions bo;
  bo.files = {t / "a.tsv"};
  bo.max_line_bytes = (uint64_t{1} << 30) + 1;
  Base64TsvSource src(bo);
  expect_error([&] { run_conversion(src, options_for(t / "o2", 1, 1)); }, {"--max-line-bytes"});
}

}  // namespace
}  // namespace fastnn::converters
