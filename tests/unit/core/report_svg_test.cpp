// core/report/svg_line_chart.h, svg_bar_chart.h, svg_axes.h: the drawn points and bars turn back into
// the input numbers through the mapping the <svg> carries, hostile names are escaped, and the
// limits hold.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/report/svg_axes.h"
#include "core/report/svg_bar_chart.h"
#include "core/report/svg_line_chart.h"

namespace fastnn::report {
namespace {

struct Mapping {
  double x_min, x_max, y_min, y_max, left, top, width, height;
  double x(double px) const { return x_min + (px - left) / width * (x_max - x_min); }
  double y(double py) const { return y_max - (py - top) / height * (y_max - y_min); }
};

std::string attr(const std::string& svg, const std::string& name) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex(name + "=\"([^\"]*)\""))) << name;
  return m[1];
}

Mapping mapping(const std::string& svg) {
  Mapping m{};
  m.x_min = std::stod(attr(svg, "data-x-min"));
  m.x_max = std::stod(attr(svg, "data-x-max"));
  m.y_min = std::stod(attr(svg, "data-y-min"));
  m.y_max = std::stod(attr(svg, "data-y-max"));
  std::istringstream plot(attr(svg, "data-plot"));
  plot >> m.left >> m.top >> m.width >> m.height;
  return m;
}

// name → points, in document order.
std::map<std::string, std::vector<std::pair<double, double>>> polylines(const std::string& svg) {
  std::map<std::string, std::vector<std::pair<double, double>>> out;
  const std::regex re("<polyline class=\"series\" data-name=\"([^\"]*)\"[^>]* points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
    auto& pts = out[(*it)[1]];
    std::istringstream ss((*it)[2].str());
    for (std::string p; ss >> p;) {
      const size_t c = p.find(',');
      pts.push_back({std::stod(p.substr(0, c)), std::stod(p.substr(c + 1))});
    }
  }
  return out;
}

TEST(NiceTicks, CoverTheRangeWithRoundSteps) {
  const std::vector<double> unit = nice_ticks(0, 1);
  ASSERT_EQ(unit.size(), 6u);
  for (size_t i = 0; i < unit.size(); ++i) EXPECT_NEAR(unit[i], 0.2 * static_cast<double>(i), 1e-12);
  const std::vector<double> t = nice_ticks(0.37, 2.31);
  EXPECT_LE(t.front(), 0.37);
  EXPECT_GE(t.back(), 2.31);
  EXPECT_NEAR(t[1] - t[0], 0.5, 1e-12);
  const std::vector<double> flat = nice_ticks(3, 3);
  EXPECT_LT(flat.front(), 3);
  EXPECT_GT(flat.back(), 3);
  EXPECT_GE(nice_ticks(NAN, 1).size(), 2u);
}

TEST(LineChart, PointsMapBackToTheSeries) {
  Series loss{"loss", {}, {}}, acc{"<script>&acc", {}, {}};
  for (int i = 0; i < 50; ++i) {
    loss.x.push_back(100.0 * (i + 1));
    loss.y.push_back(2.3 * std::exp(-0.05 * i) + 0.01 * (i % 3));
    acc.x.push_back(100.0 * (i + 1));
    acc.y.push_back(1 - std::exp(-0.08 * i));
  }
  const std::string svg = svg_line_chart({.title = "loss <&>", .x_label = "step", .y_label = "loss"}, {loss, acc});
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"&lt;script&gt;&amp;acc\""), std::string::npos);
  EXPECT_NE(svg.find("<title>loss &lt;&amp;&gt;</title>"), std::string::npos);
  const Mapping m = mapping(svg);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  for (const Series* s : {&loss, &acc}) {
    const auto& pts = lines.at(s == &loss ? "loss" : "&lt;script&gt;&amp;acc");
    ASSERT_EQ(pts.size(), s->x.size());
    // Coordinates carry 2 decimals: half a hundredth of a pixel in data units.
    const double tx = 0.006 * (m.x_max - m.x_min) / m.width, ty = 0.006 * (m.y_max - m.y_min) / m.height;
    for (size_t i = 0; i < pts.size(); ++i) {
      EXPECT_NEAR(m.x(pts[i].first), s->x[i], tx) << i;
      EXPECT_NEAR(m.y(pts[i].second), s->y[i], ty) << i;
      EXPECT_GE(pts[i].first, m.left - 0.01);
      EXPECT_LE(pts[i].first, m.left + m.width + 0.01);
      EXPECT_GE(pts[i].second, m.top - 0.01);
      EXPECT_LE(pts[i].second, m.top + m.height + 0.01);
    }
  }
  EXPECT_LE(m.x_min, 100);
  EXPECT_GE(m.x_max, 5000);
}

TEST(LineChart, SkipsNonFiniteAndThinsLongSeries) {
  Series s{"s", {1, 2, 3, 4}, {1, NAN, INFINITY, 2}};
  const auto pts = polylines(svg_line_chart({.title = "t"}, {s})).at("s");
  ASSERT_EQ(pts.size(), 2u);
  Series big{"big", {}, {}};
  for (size_t i = 0; i < 5 * kMaxPoints + 3; ++i) big.x.push_back(i), big.y.push_back(std::sin(0.01 * i));
  const std::string svg = svg_line_chart({.title = "t"}, {big});
  const auto bp = polylines(svg).at("big");
  EXPECT_LE(bp.size(), kMaxPoints + 1);
  EXPECT_NEAR(mapping(svg).x(bp.back().first), big.x.back(), 1e-2 * big.x.back() / 400);  // the last point is kept
  EXPECT_THROW(svg_line_chart({.title = "t"}, {Series{"bad", {1, 2}, {1}}}), Error);
  const std::string empty = svg_line_chart({.title = "t"}, {Series{"a", {}, {}}, Series{"b", {}, {}}});
  EXPECT_NE(empty.find("a (no data)"), std::string::npos);
}

TEST(BarChart, StackedSegmentsHoldTheValues) {
  BarChart c;
  c.title = "class balance";
  c.categories = {"shard-0", "shard-1", "<s2>"};
  c.segments = {"T-shirt/top", "<script>", "a&b"};
  c.values = {{10, 20, 30}, {5, 0, 15}, {12, 12, 12}};
  const std::string svg = svg_bar_chart(c);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<s2>"), std::string::npos);
  const Mapping m = mapping(svg);
  EXPECT_EQ(m.y_min, 0);
  EXPECT_GE(m.y_max, 60);
  const std::regex re("<rect class=\"bar\" data-category=\"(\\d+)\" data-segment=\"(\\d+)\" data-value=\"([^\"]+)\" "
                      "x=\"[^\"]+\" y=\"([^\"]+)\" width=\"[^\"]+\" height=\"([^\"]+)\"");
  std::vector<double> stacked(3, 0);
  int n = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it, ++n) {
    const int i = std::stoi((*it)[1]), k = std::stoi((*it)[2]);
    const double v = std::stod((*it)[3]), y = std::stod((*it)[4]), h = std::stod((*it)[5]);
    EXPECT_EQ(v, c.values[i][k]);
    // The segment spans [stacked, stacked + v] in data units: its top edge and height say so.
    EXPECT_NEAR(m.y(y), stacked[i] + v, 0.01 * m.y_max / m.height);
    EXPECT_NEAR(h / m.height * (m.y_max - m.y_min), v, 0.01 * m.y_max / m.height);
    stacked[i] += v;
  }
  EXPECT_EQ(n, 9);
  c.normalize = true;
  const std::string frac = svg_bar_chart(c);
  EXPECT_EQ(mapping(frac).y_max, 1);
  c.values.pop_back();
  EXPECT_THROW(svg_bar_chart(c), Error);
  c.values.push_back({1, -1, 0});
  EXPECT_THROW(svg_bar_chart(c), Error);
  c.values.back() = {1, 1, 1};
  c.segments.assign(kMaxSegments + 1, "x");
  EXPECT_THROW(svg_bar_chart(c), Error);
}

}  // namespace
}  // namespace fastnn::report
