// core/report/html.h, heatmap_table.h, png_data_uri.h, page_file.h: hostile names are escaped, the
// JSON block cannot be closed from inside, heat-map cells hold the right numbers, a data URI decodes to
// the pixels, and a page file is replaced only with overwrite and never left half-written.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/base64.h"
#include "core/check.h"
#include "core/image.h"
#include "core/report/heatmap_table.h"
#include "core/report/html.h"
#include "core/report/page_file.h"
#include "core/report/png_data_uri.h"

namespace fastnn::report {
namespace {

const char* const kHostile = "<script>alert('x')</script> & \"T-shirt/top\"";

TEST(HtmlEscape, EscapesEverySpecialCharacter) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(html_escape("plain text 123"), "plain text 123");
  const std::string e = html_escape(kHostile);
  EXPECT_EQ(e.find('<'), std::string::npos);
  EXPECT_EQ(e.find('"'), std::string::npos);
  EXPECT_NE(e.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(e.find(" &amp; "), std::string::npos);
}

TEST(JsonScript, CannotBeClosedFromInsideAndRoundTrips) {
  const nlohmann::json data = {{"classes", {kHostile, "</script><b>", "a&b"}}, {"n", 3}};
  const std::string s = json_script(data, "data");
  const std::string open = "<script type=\"application/json\" id=\"data\">";
  ASSERT_EQ(s.rfind(open, 0), 0u);
  const size_t end = s.find("</script>");
  EXPECT_EQ(end, s.size() - std::string("</script>\n").size()) << "only the element's own end tag";
  const std::string body = s.substr(open.size(), end - open.size());
  EXPECT_EQ(body.find_first_of("<>&"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(body), data);
  EXPECT_THROW(json_script(data, "x\" onload=\"y"), Error);
}

TEST(HtmlPage, TitleEscapedBodyKept) {
  const std::string p = html_page(kHostile, "<p id=\"b\">body</p>");
  EXPECT_EQ(p.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(p.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(p.find("<title>&lt;script&gt;"), std::string::npos);
  EXPECT_NE(p.find("<p id=\"b\">body</p>"), std::string::npos);
  // Offline: nothing is fetched.
  EXPECT_EQ(p.find("http"), std::string::npos);
  EXPECT_EQ(p.find("<link"), std::string::npos);
  EXPECT_EQ(html_section("s1", "<T>", "<p>x</p>"), "<section id=\"s1\">\n<h2>&lt;T&gt;</h2>\n<p>x</p></section>\n");
}

TEST(FormatNumber, SignificantDigitsAndNonFinite) {
  EXPECT_EQ(format_number(0.123456, 3), "0.123");
  EXPECT_EQ(format_number(1234567, 4), "1.235e+06");
  EXPECT_EQ(format_number(0.1, 17), "0.10000000000000001");
  EXPECT_EQ(format_number(std::nan(""), 4), "\xE2\x80\x93");
}

TEST(HeatmapTable, CellsHoldTheirValuesAndLabelsAreEscaped) {
  Heatmap h;
  h.caption = "confusion";
  h.corner = "true \\ predicted";
  h.row_labels = {"<script>", "a&b"};
  h.col_labels = {"<script>", "a&b"};
  h.values = {7, 1, 2, 40};
  h.row_scale = true;
  h.diagonal = true;
  const std::string t = html_heatmap_table(h);
  EXPECT_EQ(t.find("<script>"), std::string::npos);
  EXPECT_NE(t.find("<th class=\"l\">a&amp;b</th>"), std::string::npos);
  const std::regex cell("<td data-r=\"(\\d+)\" data-c=\"(\\d+)\" data-v=\"([^\"]+)\" style=\"background:([^\";]+)[^\"]*\">([^<]*)</td>");
  int n = 0;
  for (auto it = std::sregex_iterator(t.begin(), t.end(), cell); it != std::sregex_iterator(); ++it, ++n) {
    const int r = std::stoi((*it)[1]), c = std::stoi((*it)[2]);
    EXPECT_EQ(std::stod((*it)[3]), h.values[r * 2 + c]);
    EXPECT_EQ(std::stod((*it)[5]), h.values[r * 2 + c]);
    const std::string bg = (*it)[4];
    EXPECT_EQ(bg.find("31,119,180") != std::string::npos, r == c) << bg;  // diagonal hue
  }
  EXPECT_EQ(n, 4);
  // Row scale: each row's largest cell is fully shaded.
  EXPECT_NE(t.find("data-v=\"7\" style=\"background:rgba(31,119,180,0.850)"), std::string::npos);
  EXPECT_NE(t.find("data-v=\"40\" style=\"background:rgba(31,119,180,0.850)"), std::string::npos);
  h.values.pop_back();
  EXPECT_THROW(html_heatmap_table(h), Error);
}

TEST(PngDataUri, DecodesBackToThePixels) {
  Image img;
  img.width = 5;
  img.height = 3;
  img.channels = 3;
  for (int i = 0; i < 45; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 5));
  const std::string uri = png_data_uri(img.pixels.data(), 5, 3, 3);
  const std::string prefix = "data:image/png;base64,";
  ASSERT_EQ(uri.rfind(prefix, 0), 0u);
  const Image back = decode_image(base64_decode(uri.substr(prefix.size())));
  EXPECT_EQ(back.width, 5);
  EXPECT_EQ(back.height, 3);
  EXPECT_EQ(back.channels, 3);
  EXPECT_EQ(back.pixels, img.pixels);
  const std::string tag = img_tag(img, "<b>\"x\"", 2);
  EXPECT_NE(tag.find("width=\"10\" height=\"6\""), std::string::npos);
  EXPECT_NE(tag.find("alt=\"&lt;b&gt;&quot;x&quot;\""), std::string::npos);
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(PageFile, ReplacesOnlyWithOverwriteAndLeavesNoTemporary) {
  const std::string dir = ::testing::TempDir() + "/report_page_file";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/r.html";
  write_page_file(path, "one", false);
  EXPECT_EQ(slurp(path), "one");
  try {
    write_page_file(path, "two", false);
    FAIL() << "an existing file was replaced without overwrite";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(path), "one");
  write_page_file(path, "three", true);
  EXPECT_EQ(slurp(path), "three");
  // fastnn's own page is replaced without overwrite; the mark must be in the file, not just the name.
  const std::string page = html_page("t", "<p>x</p>");
  write_page_file(path, page, true);
  EXPECT_TRUE(is_fastnn_page(path));
  write_page_file(path, html_page("t", "<p>y</p>"), false);
  EXPECT_NE(slurp(path).find("<p>y</p>"), std::string::npos);
  EXPECT_FALSE(is_fastnn_page(dir + "/none.html"));
  EXPECT_THROW(write_page_file(dir, "x", true), ConfigError);                 // a folder
  EXPECT_THROW(write_page_file(dir + "/no/such/r.html", "x", true), IoError);  // no parent
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file(), (void)e;
  EXPECT_EQ(files, 1) << "a temporary was left behind";
}

}  // namespace
}  // namespace fastnn::report
