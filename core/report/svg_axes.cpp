#include "core/report/svg_axes.h"

#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "core/report/html.h"

namespace fastnn::report {

const char* series_color(size_t i) {
  static const char* const kColors[20] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                          "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                          "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
  return kColors[i % 20];
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  const double first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (double t = first; ticks.size() < 64; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

namespace {

// Axis labels: whole numbers in full (30000, not 3e+04), others with 4 significant digits.
std::string tick_label(double v) {
  if (std::fabs(v) < 1e12 && v == std::round(v)) return str(static_cast<long long>(v));
  return format_number(v, 4);
}

}  // namespace

std::string coord(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string svg_open(const PlotBox& b, int width, int height, const std::string& css_class, const std::string& title,
                     const std::vector<double>& x_ticks, const std::vector<double>& y_ticks, const std::string& x_label,
                     const std::string& y_label) {
  FASTNN_CHECK(b.x_max > b.x_min && b.y_max > b.y_min, "chart: empty axis range");
  std::string s = str("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", width, "\" height=\"", height,
                      "\" viewBox=\"0 0 ", width, " ", height, "\" class=\"", html_escape(css_class), "\" data-x-min=\"",
                      format_number(b.x_min, 17), "\" data-x-max=\"", format_number(b.x_max, 17), "\" data-y-min=\"",
                      format_number(b.y_min, 17), "\" data-y-max=\"", format_number(b.y_max, 17),
                      "\" data-plot=\"", coord(b.left), " ", coord(b.top), " ", coord(b.width), " ", coord(b.height),
                      "\" role=\"img\">\n");
  s += str("<title>", html_escape(title), "</title>\n");
  s += str("<text x=\"", coord(b.left), "\" y=\"16\" font-weight=\"600\" font-size=\"13\">", html_escape(title),
           "</text>\n");
  s += str("<rect x=\"", coord(b.left), "\" y=\"", coord(b.top), "\" width=\"", coord(b.width), "\" height=\"",
           coord(b.height), "\" fill=\"#fafafa\" stroke=\"#999\"/>\n");
  for (double t : y_ticks) {
    if (t < b.y_min - 1e-12 || t > b.y_max + 1e-12) continue;
    const std::string y = coord(b.py(t));
    s += str("<line x1=\"", coord(b.left), "\" x2=\"", coord(b.left + b.width), "\" y1=\"", y, "\" y2=\"", y,
             "\" stroke=\"#e4e4e4\"/><text x=\"", coord(b.left - 4), "\" y=\"", y,
             "\" text-anchor=\"end\" dominant-baseline=\"middle\">", html_escape(tick_label(t)), "</text>\n");
  }
  for (double t : x_ticks) {
    if (t < b.x_min - 1e-12 || t > b.x_max + 1e-12) continue;
    const std::string x = coord(b.px(t));
    s += str("<line x1=\"", x, "\" x2=\"", x, "\" y1=\"", coord(b.top + b.height), "\" y2=\"",
             coord(b.top + b.height + 4), "\" stroke=\"#999\"/><text x=\"", x, "\" y=\"", coord(b.top + b.height + 15),
             "\" text-anchor=\"middle\">", html_escape(tick_label(t)), "</text>\n");
  }
  if (!x_label.empty())
    s += str("<text x=\"", coord(b.left + b.width / 2), "\" y=\"", coord(b.top + b.height + 30),
             "\" text-anchor=\"middle\">", html_escape(x_label), "</text>\n");
  if (!y_label.empty())
    s += str("<text transform=\"translate(12 ", coord(b.top + b.height / 2), ") rotate(-90)\" text-anchor=\"middle\">",
             html_escape(y_label), "</text>\n");
  return s;
}

}  // namespace fastnn::report
