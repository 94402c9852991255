// A line chart as inline SVG: one <polyline class="series"> per series, drawn in the order given,
// with a legend when there is more than one.
//
// Points: every (x[i], y[i]) with both finite, in order, written as "px,py" with 2 decimals
// (svg_axes.h gives the mapping and the <svg> carries it). A series with no finite point draws
// nothing but keeps its legend entry ("no data"). Axis ranges: nice_ticks() over all finite points
// (y_from_zero: the y range also covers 0). Series above kMaxPoints points are thinned to every k-th
// point plus the last, so a long run's page stays small; the JSON block keeps every value.
// Errors: Error when x and y differ in length. Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace fastnn::report {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct LineChart {
  std::string title, x_label, y_label;
  int width = 560, height = 260;
  bool y_from_zero = false;
};

inline constexpr size_t kMaxPoints = 2000;

std::string svg_line_chart(const LineChart& chart, const std::vector<Series>& series);

}  // namespace fastnn::report
