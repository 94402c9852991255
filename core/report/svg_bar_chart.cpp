#include "core/report/svg_bar_chart.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/report/html.h"
#include "core/report/svg_axes.h"

namespace fastnn::report {

std::string svg_bar_chart(const BarChart& c) {
  const size_t n = c.categories.size(), m = c.segments.size();
  FASTNN_CHECK(n >= 1 && n <= kMaxBars, "bar chart '", c.title, "': ", n, " bars (1..", kMaxBars, ")");
  FASTNN_CHECK(m >= 1 && m <= kMaxSegments, "bar chart '", c.title, "': ", m, " segments (1..", kMaxSegments, ")");
  FASTNN_CHECK(c.values.size() == n, "bar chart '", c.title, "': values for ", c.values.size(), " of ", n, " bars");
  std::vector<double> totals(n, 0);
  for (size_t i = 0; i < n; ++i) {
    FASTNN_CHECK(c.values[i].size() == m, "bar chart '", c.title, "': bar ", i, " has ", c.values[i].size(),
                 " values for ", m, " segments");
    for (double v : c.values[i]) {
      FASTNN_CHECK(std::isfinite(v) && v >= 0, "bar chart '", c.title, "': value ", v, " is not finite and >= 0");
      totals[i] += v;
    }
  }
  const double top = c.normalize ? 1.0 : std::max(1e-300, *std::max_element(totals.begin(), totals.end()));
  const std::vector<double> yt = nice_ticks(0, top);
  const bool legend = m > 1;
  // The legend wraps into rows of up to 8 entries above the plot.
  const size_t legend_rows = legend ? (m + 7) / 8 : 0;
  PlotBox b;
  b.left = 60;
  b.top = 28 + 16 * static_cast<double>(legend_rows);
  b.width = c.width - b.left - 16;
  b.height = c.height - b.top - 44;
  b.x_min = 0;
  b.x_max = static_cast<double>(n);
  b.y_min = 0;
  b.y_max = yt.back();
  std::string s = svg_open(b, c.width, c.height, "chart bar", c.title, {}, yt, c.x_label, c.y_label);
  const double slot = b.width / static_cast<double>(n), bar = std::max(1.0, slot * 0.8);
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(40.0 / slot)));
  for (size_t i = 0; i < n; ++i) {
    double base = 0;
    const double scale = c.normalize ? (totals[i] > 0 ? 1 / totals[i] : 0) : 1;
    const double x = b.px(static_cast<double>(i)) + (slot - bar) / 2;
    for (size_t k = 0; k < m; ++k) {
      const double v = c.values[i][k];
      const double y0 = b.py(base), y1 = b.py(base + v * scale);
      base += v * scale;
      s += str("<rect class=\"bar\" data-category=\"", i, "\" data-segment=\"", k, "\" data-value=\"",
               format_number(v, 17), "\" x=\"", coord(x), "\" y=\"", coord(y1), "\" width=\"", coord(bar),
               "\" height=\"", coord(y0 - y1), "\" fill=\"", series_color(k), "\"><title>",
               html_escape(c.categories[i]), m > 1 ? " \xC2\xB7 " + html_escape(c.segments[k]) : std::string(), ": ",
               html_escape(format_number(v, 10)), "</title></rect>\n");
    }
    if (i % label_every == 0)
      s += str("<text x=\"", coord(x + bar / 2), "\" y=\"", coord(b.top + b.height + 14),
               "\" text-anchor=\"middle\">", html_escape(c.categories[i]), "</text>\n");
  }
  if (legend) {
    for (size_t k = 0; k < m; ++k) {
      const double lx = b.left + static_cast<double>(k % 8) * (b.width / 8);
      const double ly = 22 + 16 * static_cast<double>(k / 8);
      s += str("<rect x=\"", coord(lx), "\" y=\"", coord(ly), "\" width=\"10\" height=\"10\" fill=\"", series_color(k),
               "\"/><text x=\"", coord(lx + 14), "\" y=\"", coord(ly + 9), "\">", html_escape(c.segments[k]),
               "</text>\n");
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace fastnn::report
