#include "trainer/loop/preset_fields.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/comma_list.h"

namespace fastnn::loop {
namespace {

std::vector<double> numbers(const char* field, const std::string& text) {
  std::vector<double> out;
  for (std::string_view piece : split_commas(text)) {
    const std::string item(trim_blanks(piece));
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(v))
      throw ConfigError(str(field, ": item ", out.size() + 1, " \"", item, "\" of \"", text, "\" is not a number"));
    out.push_back(v);
  }
  return out;
}

// "lo,hi" with 0 < lo <= hi (<= 1 when `at_most_one`).
std::pair<float, float> range(const char* field, const std::string& text, bool at_most_one) {
  const std::vector<double> v = numbers(field, text);
  if (v.size() != 2)
    throw ConfigError(str(field, ": \"", text, "\" has ", v.size(), " numbers; give two, \"lo,hi\" (timm's --",
                          std::string(field) == "random_crop_scale" ? "scale 0.08 1.0" : "ratio 0.75 1.3333", ")"));
  if (!(v[0] > 0 && v[0] <= v[1] && (!at_most_one || v[1] <= 1)))
    throw ConfigError(str(field, ": [", v[0], ", ", v[1], "] must satisfy 0 < lo <= hi", at_most_one ? " <= 1" : ""));
  return {static_cast<float>(v[0]), static_cast<float>(v[1])};
}

// Fractions of 255, as timm and torchvision write them, into pixel units.
std::vector<float> fractions_of_255(const char* field, const std::string& text, bool positive) {
  std::vector<float> out;
  for (double v : numbers(field, text)) {
    if (v > 1)
      throw ConfigError(str(field, ": ", v, " is above 1; ", field, " is in timm's and torchvision's units, fractions of "
                            "255 (a pixel value of ", v, " is ", v / 255, ")"));
    if (positive ? !(v > 0) : !(v >= 0))
      throw ConfigError(str(field, ": ", v, positive ? " must be > 0" : " must be >= 0"));
    out.push_back(static_cast<float>(v * 255));
  }
  return out;
}

}  // namespace

PresetFields preset_fields(const JobConfig& c) {
  PresetFields f;
  if (c.has_random_crop_scale()) std::tie(f.area_min, f.area_max) = range("random_crop_scale", c.random_crop_scale(), true);
  if (c.has_random_crop_ratio())
    std::tie(f.aspect_min, f.aspect_max) = range("random_crop_ratio", c.random_crop_ratio(), false);
  if (c.has_input_mean()) f.mean = fractions_of_255("input_mean", c.input_mean(), false);
  if (c.has_input_std()) f.std = fractions_of_255("input_std", c.input_std(), true);
  if (c.has_crop_pct()) {
    if (!(c.crop_pct() > 0 && c.crop_pct() <= 1)) throw ConfigError(str("crop_pct must lie in (0, 1], not ", c.crop_pct()));
    f.crop_pct = c.crop_pct();
  }
  return f;
}

void apply_preset_fields(const PresetFields& f, pipeline::PreprocessConfig& p) {
  if (!f.mean.empty()) p.mean = f.mean;
  if (!f.std.empty()) p.std = f.std;
  if (f.area_min != 0) p.area_min = f.area_min, p.area_max = f.area_max;
  if (f.aspect_min != 0) p.aspect_min = f.aspect_min, p.aspect_max = f.aspect_max;
  if (f.crop_pct != 0) p.crop_pct = f.crop_pct;
}

std::string evaluation_fields_text(const PresetFields& f) {
  auto fractions = [](const std::vector<float>& v) {
    std::string t;
    for (size_t i = 0; i < v.size(); ++i) t += str(i ? "," : "", v[i] / 255);
    return t;
  };
  std::string t;
  if (!f.mean.empty()) t += str("mean ", fractions(f.mean));
  if (!f.std.empty()) t += str(t.empty() ? "" : ", ", "std ", fractions(f.std));
  if (f.crop_pct != 0) t += str(t.empty() ? "" : ", ", "crop_pct ", f.crop_pct);
  return t;
}

}  // namespace fastnn::loop
