#include "trainer/loop/sanity.h"

#include <cmath>
#include <algorithm>
#include <cstdio>

#include "core/check.h"
#include "core/logging.h"

namespace fastnn::loop {

namespace {
bool near(double loss, double expected) { return loss >= 0.5 * expected - 0.1 && loss <= 2 * expected + 1; }
}  // namespace

std::optional<std::string> first_loss_warning(double loss, int64_t num_classes) {
  FirstLossCheck c = first_loss_check(loss, num_classes, std::nullopt);
  if (c.line.empty()) return std::nullopt;
  return std::move(c.line);
}

double label_agnostic_loss(std::span<const double> logits, int64_t classes) {
  FASTNN_CHECK(classes >= 1 && !logits.empty() && logits.size() % static_cast<size_t>(classes) == 0,
               "label_agnostic_loss: ", logits.size(), " logits for ", classes, " classes");
  const size_t k = static_cast<size_t>(classes), rows = logits.size() / k;
  double total = 0;
  for (size_t r = 0; r < rows; ++r) {
    const std::span<const double> z = logits.subspan(r * k, k);
    double m = z[0], mean = 0, s = 0;
    for (double v : z) m = std::max(m, v), mean += v;
    for (double v : z) s += std::exp(v - m);
    total += m + std::log(s) - mean / static_cast<double>(k);
  }
  return total / static_cast<double>(rows);
}

FirstLossCheck first_loss_check(double loss, int64_t num_classes, std::optional<double> label_agnostic) {
  FirstLossCheck c;
  if (num_classes < 2 || !std::isfinite(loss)) return c;
  const double expected = std::log(static_cast<double>(num_classes));
  if (near(loss, expected)) return c;
  char buf[480];
  if (label_agnostic && std::isfinite(*label_agnostic) && near(loss, *label_agnostic)) {
    std::snprintf(buf, sizeof buf,
                  "first loss %.4f is far from ln(%lld) = %.4f because the initial logits are large (their "
                  "label-agnostic loss is %.4f): the initialisation does not start from uniform predictions, "
                  "the labels look consistent",
                  loss, static_cast<long long>(num_classes), expected, *label_agnostic);
    c.line = buf;
    return c;
  }
  c.warning = true;
  std::snprintf(buf, sizeof buf,
                "first loss %.4f is far from ln(num_classes) = ln(%lld) = %.4f: check the initialisation, the "
                "labels and num_classes",
                loss, static_cast<long long>(num_classes), expected);
  c.line = buf;
  if (label_agnostic) c.line += str(" (the logits' label-agnostic loss is ", *label_agnostic, ")");
  return c;
}

void report_first_loss(double loss, const Tensor& logits) {
  const int64_t classes = logits.shape().back();
  std::optional<double> l0;
  if (logits.device() == Device::kCpu) l0 = label_agnostic_loss(logits.to_vector<double>(), classes);
  const FirstLossCheck c = first_loss_check(loss, classes, l0);
  if (c.warning) log_warn(c.line);
  else if (!c.line.empty()) log_info(c.line);
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

std::string eval_collapse_report(const EvalShape& e) {
  const auto k = static_cast<size_t>(e.num_classes);
  std::string what;
  if (k >= 2 && e.confusion.size() == k * k) {
    std::vector<int64_t> predicted(k, 0), actual(k, 0);
    int64_t total = 0;
    for (size_t t = 0; t < k; ++t)
      for (size_t p = 0; p < k; ++p) {
        predicted[p] += e.confusion[t * k + p];
        actual[t] += e.confusion[t * k + p];
        total += e.confusion[t * k + p];
      }
    const auto top = std::max_element(predicted.begin(), predicted.end());
    const double share = total ? static_cast<double>(*top) / static_cast<double>(total) : 0;
    const double commonest = total ? static_cast<double>(*std::max_element(actual.begin(), actual.end())) / static_cast<double>(total) : 0;
    if (total >= 10 && share >= 0.9 && commonest < 0.9)
      what = str("the evaluation predicts class ", top - predicted.begin(), " for ", std::lround(100 * share),
                 "% of its ", total, " examples (the commonest class is ", std::lround(100 * commonest), "% of them)");
  }
  const double exploded = 20 * std::log(std::max<double>(2, static_cast<double>(e.num_classes))) + 10;
  if (what.empty() && e.eval_loss > exploded)
    what = str("the evaluation loss is ", e.eval_loss, " (a uniform guess scores ",
               std::log(std::max<double>(2, static_cast<double>(e.num_classes))), ")");
  if (what.empty() || e.train_accuracy < e.eval_accuracy + 0.2) return "";
  char acc[32];
  std::snprintf(acc, sizeof acc, "%.2f", e.train_accuracy);
  std::string line = str(what, " while training reaches accuracy ", acc, ". ");
  if (e.batch_norm_decay <= 0)
    return line + "Likely over-fitting, or evaluation images unlike the training ones (preprocessing, labels).";
  const double d = e.batch_norm_decay;
  const double kept = std::pow(d, static_cast<double>(e.steps));
  const double settle = 3.0 / (1.0 - d);
  // The advice: the largest of TF-slim's usual decays that settles within the steps trained so far.
  const double fits = 1.0 - 3.0 / static_cast<double>(std::max<int64_t>(e.steps, 1));
  double advised = 0.9;
  for (double c : {0.999, 0.99})
    if (c <= fits && c < d) {
      advised = c;
      break;
    }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "Likely cause: batch norm's moving averages, which evaluation uses, have had %lld updates at decay %g "
                "and still hold %.0f%% of their starting values (%g^%lld); they need about %.0f steps to settle. Train "
                "longer",
                static_cast<long long>(e.steps), d, 100 * kept, d, static_cast<long long>(e.steps), settle);
  line += buf;
  if (advised >= d) return line + ".";  // already as fast as the advice: only more steps help
  std::snprintf(buf, sizeof buf, ", or set batch_norm_decay=%g (timm: bn_momentum=%g), which settles in about %.0f steps.",
                advised, 1.0 - advised, 3.0 / (1.0 - advised));
  return line + buf;
}

}  // namespace fastnn::loop
