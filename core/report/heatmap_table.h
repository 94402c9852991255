// A heat-map table: an HTML <table class="heat"> whose cells show numbers on a background whose
// strength grows with the value (a confusion matrix, shard × class counts).
//
// Cell (r, c) is <td data-r="r" data-c="c" data-v="VALUE"> with the value printed (format_number,
// `significant` digits). Shading: value / the row's largest value (row_scale) or / the table's
// largest value; the diagonal of a square table is drawn in a second hue when `diagonal` is set
// (correct predictions). Labels are escaped. The caller bounds the size (kMaxHeatmapCells; Error
// above it). Thread-safe.
#pragma once

#include <string>
#include <vector>

namespace fastnn::report {

struct Heatmap {
  std::string caption;                          // above the table; "" = none
  std::string corner;                           // the top-left cell ("true \\ predicted")
  std::vector<std::string> row_labels, col_labels;
  std::vector<double> values;                   // row-major, rows × cols
  bool row_scale = false;
  bool diagonal = false;
  int significant = 6;
};

inline constexpr size_t kMaxHeatmapCells = 256 * 256;

std::string html_heatmap_table(const Heatmap& heatmap);

}  // namespace fastnn::report
