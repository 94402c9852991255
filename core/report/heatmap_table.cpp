#include "core/report/heatmap_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "core/report/html.h"

namespace fastnn::report {

std::string html_heatmap_table(const Heatmap& h) {
  const size_t rows = h.row_labels.size(), cols = h.col_labels.size();
  FASTNN_CHECK(rows * cols <= kMaxHeatmapCells, "heat map '", h.caption, "': ", rows, "x", cols, " cells (at most ",
               kMaxHeatmapCells, ")");
  FASTNN_CHECK(h.values.size() == rows * cols, "heat map '", h.caption, "': ", h.values.size(), " values for ", rows,
               "x", cols, " cells");
  double table_max = 0;
  for (double v : h.values)
    if (std::isfinite(v)) table_max = std::max(table_max, v);
  std::string s = "<table class=\"heat\">\n";
  if (!h.caption.empty()) s += str("<caption>", html_escape(h.caption), "</caption>\n");
  s += str("<tr><th class=\"l\">", html_escape(h.corner), "</th>");
  for (const std::string& c : h.col_labels) s += str("<th>", html_escape(c), "</th>");
  s += "</tr>\n";
  for (size_t r = 0; r < rows; ++r) {
    double row_max = 0;
    for (size_t c = 0; c < cols; ++c)
      if (std::isfinite(h.values[r * cols + c])) row_max = std::max(row_max, h.values[r * cols + c]);
    const double scale = h.row_scale ? row_max : table_max;
    s += str("<tr><th class=\"l\">", html_escape(h.row_labels[r]), "</th>");
    for (size_t c = 0; c < cols; ++c) {
      const double v = h.values[r * cols + c];
      const double a = scale > 0 && std::isfinite(v) ? std::clamp(v / scale, 0.0, 1.0) : 0;
      // Blue for the diagonal of a confusion matrix (hits), orange elsewhere (confusions).
      const bool diag = h.diagonal && r == c;
      char bg[64];
      std::snprintf(bg, sizeof bg, "rgba(%s,%.3f)", diag ? "31,119,180" : "255,127,14", 0.85 * a);
      s += str("<td data-r=\"", r, "\" data-c=\"", c, "\" data-v=\"", format_number(v, 17), "\" style=\"background:",
               bg, a > 0.6 ? ";color:#fff" : "", "\">", html_escape(format_number(v, h.significant)), "</td>");
    }
    s += "</tr>\n";
  }
  s += "</table>\n";
  return s;
}

}  // namespace fastnn::report
