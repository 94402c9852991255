#include "core/report/svg_line_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/report/html.h"
#include "core/report/svg_axes.h"

namespace fastnn::report {

std::string svg_line_chart(const LineChart& c, const std::vector<Series>& series) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x_lo = kInf, x_hi = -kInf, y_lo = kInf, y_hi = -kInf;
  for (const Series& s : series) {
    FASTNN_CHECK(s.x.size() == s.y.size(), "line chart '", c.title, "': series '", s.name, "' has ", s.x.size(),
                 " x and ", s.y.size(), " y values");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  }
  if (c.y_from_zero && std::isfinite(y_lo)) y_lo = std::min(y_lo, 0.0), y_hi = std::max(y_hi, 0.0);
  const std::vector<double> xt = nice_ticks(x_lo, x_hi), yt = nice_ticks(y_lo, y_hi);
  const bool legend = series.size() > 1;
  PlotBox b;
  b.left = 60;
  b.top = legend ? 40 : 26;
  b.width = c.width - b.left - 16;
  b.height = c.height - b.top - 40;
  b.x_min = xt.front();
  b.x_max = xt.back();
  b.y_min = yt.front();
  b.y_max = yt.back();
  std::string s = svg_open(b, c.width, c.height, "chart line", c.title, xt, yt, c.x_label, c.y_label);
  double lx = b.left;
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& ser = series[k];
    const size_t n = ser.x.size();
    const size_t every = n > kMaxPoints ? (n + kMaxPoints - 1) / kMaxPoints : 1;
    std::string points;
    size_t drawn = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i % every != 0 && i + 1 != n) continue;
      if (!std::isfinite(ser.x[i]) || !std::isfinite(ser.y[i])) continue;
      if (!points.empty()) points += ' ';
      points += coord(b.px(ser.x[i])) + "," + coord(b.py(ser.y[i]));
      ++drawn;
    }
    const char* color = series_color(k);
    s += str("<polyline class=\"series\" data-name=\"", html_escape(ser.name), "\" fill=\"none\" stroke=\"", color,
             "\" stroke-width=\"1.6\" points=\"", points, "\"/>\n");
    if (drawn == 1)  // a single point draws no line
      s += str("<circle cx=\"", points.substr(0, points.find(',')), "\" cy=\"", points.substr(points.find(',') + 1),
               "\" r=\"2.5\" fill=\"", color, "\"/>\n");
    if (legend) {
      const std::string label = ser.name + (drawn == 0 ? " (no data)" : "");
      s += str("<rect x=\"", coord(lx), "\" y=\"24\" width=\"10\" height=\"10\" fill=\"", color, "\"/><text x=\"",
               coord(lx + 14), "\" y=\"33\">", html_escape(label), "</text>\n");
      lx += 24 + 6.5 * static_cast<double>(label.size());
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace fastnn::report
