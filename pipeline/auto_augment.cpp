#include "pipeline/auto_augment.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "pipeline/rng.h"

// The magnitude tables (float32 as torch computes them; where torch fuses a multiply-add, std::fma
// says so) and the two policies' draws. The ops themselves: auto_augment_ops.cpp.

namespace fastnn::pipeline {
namespace {

const char* const kOpNames[kNumAugmentOps] = {"Identity", "ShearX",     "ShearY",     "TranslateX", "TranslateY",
                                              "Rotate",   "Brightness", "Color",      "Contrast",   "Sharpness",
                                              "Posterize", "Solarize",  "AutoContrast", "Equalize"};

}  // namespace

AutoAugmentPolicy parse_auto_augment(std::string_view name) {
  if (name.empty()) return AutoAugmentPolicy::kNone;
  if (name == "randaugment") return AutoAugmentPolicy::kRandAugment;
  if (name == "trivialaugmentwide") return AutoAugmentPolicy::kTrivialAugmentWide;
  throw ConfigError(str("auto_augment \"", name,
                        "\": one of randaugment, trivialaugmentwide (torchvision's RandAugment and "
                        "TrivialAugmentWide), or empty for none; timm's --aa strings (rand-m9-...) use "
                        "timm's own op set and are not accepted"));
}

const char* auto_augment_name(AutoAugmentPolicy p) {
  return p == AutoAugmentPolicy::kRandAugment ? "randaugment"
         : p == AutoAugmentPolicy::kTrivialAugmentWide ? "trivialaugmentwide"
                                                        : "";
}

void validate_auto_augment(const AutoAugmentOptions& o) {
  if (o.policy == AutoAugmentPolicy::kNone) return;
  if (o.magnitude_bins < 2 || o.magnitude_bins > 1000)
    throw ConfigError(str("auto_augment_magnitude_bins must be in [2, 1000], not ", o.magnitude_bins));
  if (o.policy == AutoAugmentPolicy::kRandAugment) {
    if (o.magnitude < 0 || o.magnitude >= o.magnitude_bins)
      throw ConfigError(str("auto_augment_magnitude must be in [0, ", o.magnitude_bins - 1,
                            "] (auto_augment_magnitude_bins - 1), not ", o.magnitude));
    if (o.num_ops < 0 || o.num_ops > AutoAugment::kMaxOps)
      throw ConfigError(str("auto_augment_num_ops must be in [0, ", AutoAugment::kMaxOps, "], not ", o.num_ops));
  }
}

const char* augment_op_name(AugmentOp op) { return kOpNames[static_cast<int>(op)]; }

bool augment_op_signed(AugmentOp op) {
  return op != AugmentOp::kIdentity && op != AugmentOp::kPosterize && op != AugmentOp::kSolarize &&
         op != AugmentOp::kAutoContrast && op != AugmentOp::kEqualize;
}

// torch 1.13's linspace_kernel: step = (end - start) / (steps - 1); element i is start + step * i for
// i < steps / 2, else end - step * (steps - 1 - i), both compiled to one fused multiply-add. Its
// vectorised loop (AVX2: 8 floats, two vectors a turn) fills each whole block of 16 as two bases
// computed that way plus k * step for lane k (not fused); the rest element by element.
std::vector<float> torch_linspace(float start, float end, int steps) {
  std::vector<float> v(static_cast<size_t>(std::max(steps, 0)));
  if (steps == 1) v[0] = start;
  if (steps <= 1) return v;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int half = steps / 2;
  auto at = [&](int i) {
    return i < half ? std::fma(step, static_cast<float>(i), start)
                    : std::fma(-step, static_cast<float>(steps - i - 1), end);
  };
  int i = 0;
  for (; i + 16 <= steps; i += 16)
    for (int b : {i, i + 8}) {
      const float base = at(b);
      for (int k = 0; k < 8; ++k) {
        volatile float lane = static_cast<float>(k) * step;  // rounded on its own, as torch's lanes are
        v[b + k] = base + lane;
      }
    }
  for (; i < steps; ++i) v[i] = at(i);
  return v;
}

namespace {

// The Python float (a double) as torch converts a linspace end: to the nearest float.
float as_float(double v) { return static_cast<float>(v); }

}  // namespace

std::vector<float> magnitude_table(AutoAugmentPolicy policy, AugmentOp op, int bins, int height, int width) {
  const bool wide = policy == AutoAugmentPolicy::kTrivialAugmentWide;
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY: return torch_linspace(0.0f, as_float(wide ? 0.99 : 0.3), bins);
    case AugmentOp::kTranslateX:
      return torch_linspace(0.0f, wide ? 32.0f : static_cast<float>(150.0 / 331.0 * width), bins);
    case AugmentOp::kTranslateY:
      return torch_linspace(0.0f, wide ? 32.0f : static_cast<float>(150.0 / 331.0 * height), bins);
    case AugmentOp::kRotate: return torch_linspace(0.0f, wide ? 135.0f : 30.0f, bins);
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness: return torch_linspace(0.0f, as_float(wide ? 0.99 : 0.9), bins);
    case AugmentOp::kPosterize: {
      // 8 - (arange(bins) / ((bins - 1) / q)).round().int(): a float32 division, rounded half to even.
      const float d = static_cast<float>((bins - 1) / (wide ? 6.0 : 4.0));
      std::vector<float> t(static_cast<size_t>(bins));
      for (int i = 0; i < bins; ++i) t[i] = static_cast<float>(8 - static_cast<int>(std::nearbyint(static_cast<float>(i) / d)));
      return t;
    }
    case AugmentOp::kSolarize: return torch_linspace(255.0f, 0.0f, bins);
    default: return {};
  }
}

AutoAugment::AutoAugment(const AutoAugmentOptions& options, int height, int width)
    : options_(options), height_(height), width_(width) {
  validate_auto_augment(options_);
  if (!enabled()) return;
  for (int k = 0; k < kNumAugmentOps; ++k)
    tables_[k] = magnitude_table(options_.policy, static_cast<AugmentOp>(k), options_.magnitude_bins, height, width);
}

int AutoAugment::draw(uint64_t seed, int64_t epoch, uint64_t index, AugmentStep* steps) const {
  if (!enabled()) return 0;
  SampleRng rng(seed, static_cast<uint64_t>(epoch), index, RngStream::kAutoAugment);
  const bool rand = options_.policy == AutoAugmentPolicy::kRandAugment;
  const int count = rand ? options_.num_ops : 1;
  for (int i = 0; i < count; ++i) {
    AugmentStep& s = steps[i];
    s = AugmentStep{};
    s.op = static_cast<AugmentOp>(rng.below(kNumAugmentOps));
    const std::vector<float>& table = tables_[static_cast<int>(s.op)];
    if (!table.empty()) {
      s.bin = rand ? options_.magnitude : static_cast<int>(rng.below(table.size()));
      s.magnitude = table[static_cast<size_t>(s.bin)];
    }
    if (augment_op_signed(s.op) && rng.coin()) {
      s.negated = true;
      s.magnitude = -s.magnitude;
    }
  }
  return count;
}

void AutoAugment::apply(const Image8& image, uint64_t seed, int64_t epoch, uint64_t index,
                        std::vector<uint8_t>& scratch) const {
  FASTNN_CHECK(image.width == width_ && image.height == height_, "auto augment: image ", image.width, "x",
               image.height, ", tables for ", width_, "x", height_);
  AugmentStep steps[kMaxOps];
  const int count = draw(seed, epoch, index, steps);
  for (int i = 0; i < count; ++i) apply_augment_op(steps[i].op, steps[i].magnitude, image, scratch);
}

}  // namespace fastnn::pipeline
