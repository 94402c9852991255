#include "trainer/loop/sanity.h"

#include <cmath>
#include <cstdio>

#include "core/check.h"

namespace fastnn::loop {

std::optional<std::string> first_loss_warning(double loss, int64_t num_classes) {
  if (num_classes < 2 || !std::isfinite(loss)) return std::nullopt;
  const double expected = std::log(static_cast<double>(num_classes));
  if (loss >= 0.5 * expected - 0.1 && loss <= 2 * expected + 1) return std::nullopt;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "first loss %.4f is far from ln(num_classes) = ln(%lld) = %.4f: check the initialisation, the "
                "labels and num_classes",
                loss, static_cast<long long>(num_classes), expected);
  return std::string(buf);
}

void check_loss_finite(double loss, int64_t step, double lr) {
  if (std::isfinite(loss)) return;
  throw Error(str("training diverged: loss is ", std::isnan(loss) ? "NaN" : "infinite", " at step ", step,
                  " (learning rate ", lr, "); lower learning_rate, set max_gradient_norm, or check the data"));
}

GapReport accuracy_gap_report(double train_accuracy, double eval_accuracy) {
  GapReport r;
  const double gap = train_accuracy - eval_accuracy;
  char buf[320];
  std::snprintf(buf, sizeof buf, "train/eval accuracy gap: train %.4f, eval %.4f, gap %+.4f", train_accuracy,
                eval_accuracy, gap);
  r.line = buf;
  if (gap > 0.2) {
    r.suspicious = true;
    r.line += " (large: overfitting, or batch-norm moving statistics that do not match the batch statistics)";
  }
  return r;
}

}  // namespace fastnn::loop
