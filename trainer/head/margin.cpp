#include "trainer/head/margin.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/check.h"

namespace fastnn::head {
namespace {

constexpr double kPi = std::numbers::pi;

struct LossName {
  std::string_view name;
  bool normalized;
  bool cosine_margin;  // cosface: `margin` is m3; arcface: m2
};
constexpr LossName kLosses[] = {
    {"softmax", false, false}, {"arcface", true, false},      {"cosface", true, true},
    {"dist_softmax", false, false}, {"dist_arcface", true, false}, {"dist_cosface", true, true},
};

void check_range(double v, double lo, double hi, const char* flag, const char* why) {
  if (!(v >= lo && v <= hi))  // also rejects NaN
    throw ConfigError(str(flag, "=", v, " is out of range: ", why));
}

}  // namespace

bool is_model_parallel_loss(std::string_view loss_type) { return loss_type.starts_with("dist_"); }

MarginSpec margin_spec(std::string_view loss_type, double margin, double scale, std::optional<double> m1,
                       std::optional<double> m2, std::optional<double> m3, bool easy_margin) {
  const LossName* loss = nullptr;
  for (const auto& l : kLosses)
    if (l.name == loss_type) loss = &l;
  if (!loss) {
    std::string choices;
    for (const auto& l : kLosses) choices += str(choices.empty() ? "" : ", ", l.name);
    throw ConfigError(str("--loss_type=", loss_type, " is not one of: ", choices));
  }
  MarginSpec spec;
  if (!loss->normalized) {
    const char* flag = m1 ? "--margin1" : m2 ? "--margin2" : m3 ? "--margin3" : easy_margin ? "--easy_margin" : nullptr;
    if (flag)
      throw ConfigError(str(flag, " applies to the margin losses (arcface, cosface and their dist_ forms), ",
                            "not --loss_type=", loss_type));
    return spec;
  }
  spec.normalized = true;
  spec.easy_margin = easy_margin;
  if (!(scale > 0 && std::isfinite(scale))) throw ConfigError(str("--scale=", scale, " must be a finite number > 0"));
  spec.scale = scale;
  if (m1 || m2 || m3) {
    spec.m1 = m1.value_or(1.0);
    spec.m2 = m2.value_or(0.0);
    spec.m3 = m3.value_or(0.0);
  } else if (loss->cosine_margin) {
    check_range(margin, 0.0, kMaxMargin3, "--margin", "the cosine margin of cosface must be in [0, 1]");
    spec.m3 = margin;
  } else {
    check_range(margin, 0.0, kPi / 2, "--margin", "the angular margin of arcface must be in [0, pi/2] radians");
    spec.m2 = margin;
  }
  check_range(spec.m1, 1.0, kMaxMargin1, "--margin1", "the multiplicative angular margin must be in [1, 10]");
  check_range(spec.m2, 0.0, kPi / 2, "--margin2", "the additive angular margin must be in [0, pi/2] radians");
  check_range(spec.m3, 0.0, kMaxMargin3, "--margin3", "the additive cosine margin must be in [0, 1]");
  return spec;
}

}  // namespace fastnn::head
