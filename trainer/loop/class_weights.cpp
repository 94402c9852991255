#include "trainer/loop/class_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/comma_list.h"

namespace fastnn::loop {
namespace {

std::vector<double> balanced(const JobConfig& c, const RunSetup& s) {
  const SplitInfo* train = s.manifest.find_split("train");
  if (!c.train_files().empty() || !c.file_pattern().empty() || train == nullptr)
    throw ConfigError(str("class_weights=balanced counts the classes in ", c.dataset_dir(),
                          "/manifest.json's train split, and this run's training records ",
                          train ? "are named by train_files / file_pattern" : "come from no such split",
                          "; give num_classes weights instead (class_weights=w0,w1,...)"));
  const std::vector<uint64_t>& hist = train->label_histogram;
  std::vector<double> counts(static_cast<size_t>(s.num_classes), 0);
  double total = 0;
  for (int64_t m = 0; m < s.num_classes; ++m) {
    const int64_t data_class = m + s.labels_offset;
    if (data_class >= 0 && data_class < static_cast<int64_t>(hist.size()))
      counts[static_cast<size_t>(m)] = static_cast<double>(hist[static_cast<size_t>(data_class)]);
    total += counts[static_cast<size_t>(m)];
  }
  std::vector<double> w(counts.size());
  for (size_t m = 0; m < counts.size(); ++m) {
    if (counts[m] == 0)
      throw ConfigError(str("class_weights=balanced: class ", m, " has no record in the train split of ",
                            c.dataset_dir(), " (its weight would be infinite); give num_classes weights instead"));
    w[m] = total / (static_cast<double>(s.num_classes) * counts[m]);
  }
  return w;
}

std::vector<double> listed(const std::string& text, int64_t num_classes) {
  std::vector<double> w;
  for (std::string_view piece : split_commas(text)) {
    const std::string item(trim_blanks(piece));
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size())
      throw ConfigError(str("class_weights: item ", w.size() + 1, " \"", item,
                            "\" is not a number (give balanced, or num_classes numbers separated by commas)"));
    if (!(v > 0 && std::isfinite(v)))
      throw ConfigError(str("class_weights: the weight of class ", w.size(), " is ", item, "; class weights are > 0"));
    w.push_back(v);
  }
  if (static_cast<int64_t>(w.size()) != num_classes)
    throw ConfigError(str("class_weights lists ", w.size(), " weight(s) for ", num_classes,
                          " classes; give one per class, in class order"));
  return w;
}

}  // namespace

std::vector<double> resolve_class_weights(const JobConfig& c, const RunSetup& s) {
  if (c.class_weights().empty()) return {};
  if (c.class_weights() == "balanced") return balanced(c, s);
  return listed(c.class_weights(), s.num_classes);
}

std::string class_weights_text(const std::vector<double>& w) {
  constexpr size_t kShown = 12;
  std::string out = "class weights ";
  for (size_t i = 0; i < w.size() && i < kShown; ++i) out += str(i ? ", " : "", w[i]);
  if (w.size() > kShown) out += str(" and ", w.size() - kShown, " more");
  return out;
}

std::string class_balance_text(const std::vector<uint64_t>& stored, int world) {
  uint64_t total = 0, least = UINT64_MAX, most = 0, classes = 0;
  for (uint64_t n : stored) {
    if (n == 0) continue;
    total += n;
    ++classes;
    least = std::min(least, n);
    most = std::max(most, n);
  }
  if (classes == 0) return "class_balanced_sampling: no records";
  const uint64_t each = total / classes;
  return str("class_balanced_sampling: each epoch every one of ", classes, " classes sends ", each,
             total % classes ? str(" or ", each + 1) : "", " records", world > 1 ? " from rank 0's shards" : "",
             " (stored: ", least, " to ", most, " a class), repeated or passed over evenly, another subset each epoch",
             world > 1 ? "; every rank balances its own shards" : "");
}

}  // namespace fastnn::loop
