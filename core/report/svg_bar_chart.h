// A stacked bar chart as inline SVG: one bar per category (a shard), split into segments (classes)
// whose heights are the values; or, with one segment, a plain bar chart (a histogram).
//
// Every bar segment is a <rect class="bar"> carrying data-category, data-segment (indices) and
// data-value, and a <title> tooltip "category · segment: value". Bars are drawn left to right in the
// order given, each segment stacked from the bottom in segment order. normalize: each bar is drawn as
// fractions of its own total (y axis 0..1), which shows class balance across shards of unequal size.
// The caller keeps the chart small: at most kMaxBars categories and kMaxSegments segments (Error
// otherwise; merge the rest into an "other" segment first).
// Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace fastnn::report {

struct BarChart {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;  // one bar each
  std::vector<std::string> segments;    // legend entries; one: no legend
  std::vector<std::vector<double>> values;  // [category][segment], >= 0
  bool normalize = false;
  int width = 640, height = 280;
};

inline constexpr size_t kMaxBars = 256, kMaxSegments = 24;

std::string svg_bar_chart(const BarChart& chart);

}  // namespace fastnn::report
