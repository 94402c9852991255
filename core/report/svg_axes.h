// What the report charts share: the categorical colours, "nice" axis ticks, and the axis frame.
//
// A chart maps data to pixels linearly: px = left + (x - x_min) / (x_max - x_min) * width, and
// py = top + (y_max - y) / (y_max - y_min) * height (SVG's y grows downwards). Each chart's <svg>
// carries that mapping as attributes (data-x-min, data-x-max, data-y-min, data-y-max and
// data-plot="left top width height"), so a reader can turn any drawn point back into data.
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <vector>

namespace fastnn::report {

// One of 20 distinguishable colours ("#rrggbb"), cycling.
const char* series_color(size_t i);

// Ticks at a 1, 2 or 5 × 10^k step covering [lo, hi] with about `count` intervals; the first tick is
// <= lo and the last >= hi, so they also give the axis range. lo == hi (or non-finite) is widened.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

struct PlotBox {
  double left = 56, top = 28, width = 0, height = 0;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double px(double x) const { return left + (x - x_min) / (x_max - x_min) * width; }
  double py(double y) const { return top + (y_max - y) / (y_max - y_min) * height; }
};

// "<svg ... data-...>" opening tag with the box's mapping, the title (escaped), the frame, the x and
// y ticks with their labels (x ticks omitted when x_ticks is empty) and the axis labels. The caller
// appends its marks and "</svg>".
std::string svg_open(const PlotBox& box, int width, int height, const std::string& css_class, const std::string& title,
                     const std::vector<double>& x_ticks, const std::vector<double>& y_ticks, const std::string& x_label,
                     const std::string& y_label);

// A coordinate as written into SVG: fixed, 2 decimals.
std::string coord(double v);

}  // namespace fastnn::report
