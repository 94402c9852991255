#include "converters/class_balance.h"

#include <cstdio>

#include "core/check.h"
#include "core/name_escape.h"

namespace fastnn::converters {
namespace {

std::string class_label(const std::vector<std::string>& names, int64_t c) {
  if (c >= 0 && c < static_cast<int64_t>(names.size())) return str(c, " \"", escape_name(names[c]), "\"");
  return std::to_string(c);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

ClassBalance class_balance(const std::vector<uint64_t>& histogram) {
  ClassBalance b;
  b.counts = histogram;
  for (size_t c = 0; c < histogram.size(); ++c) {
    const uint64_t n = histogram[c];
    b.total += n;
    if (n == 0) {
      b.missing.push_back(static_cast<int64_t>(c));
      continue;
    }
    if (b.largest < 0 || n > histogram[b.largest]) b.largest = static_cast<int64_t>(c);
    if (b.smallest < 0 || n < histogram[b.smallest]) b.smallest = static_cast<int64_t>(c);
  }
  if (b.largest >= 0)
    b.ratio = static_cast<double>(histogram[b.largest]) / static_cast<double>(histogram[b.smallest]);
  return b;
}

std::vector<std::string> class_balance_warnings(const std::string& split, const ClassBalance& b,
                                                const std::vector<std::string>& names, double max_ratio) {
  std::vector<std::string> out;
  if (b.largest >= 0 && b.ratio > max_ratio) {
    const uint64_t big = b.counts[b.largest], small = b.counts[b.smallest];
    out.push_back(str("split ", split, ": class ", class_label(names, b.largest), " has ", big, " records, class ",
                      class_label(names, b.smallest), " ", small, ": ", fixed(b.ratio, 1),
                      " times as many (warned above ", max_ratio, ", `fastnn check --max-class-ratio`); the largest class alone is ",
                      fixed(100.0 * static_cast<double>(big) / static_cast<double>(b.total), 1),
                      "% of the split, the accuracy of always predicting it"));
  }
  if (!b.missing.empty()) {
    std::string listed;
    for (size_t i = 0; i < b.missing.size() && i < 5; ++i) listed += (i ? ", " : "") + class_label(names, b.missing[i]);
    if (b.missing.size() > 5) listed += str(" and ", b.missing.size() - 5, " more");
    out.push_back(str("split ", split, " has no record of ", b.missing.size(), " of the ", b.counts.size(),
                      " classes: ", listed, b.total == 0 ? "" : "; its accuracy says nothing about them"));
  }
  return out;
}

}  // namespace fastnn::converters
