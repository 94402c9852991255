// torchvision's RandAugment (Cubuk et al., 2019) and TrivialAugmentWide (Müller & Hutter, 2021) for
// training images: one or more photometric or geometric ops, each drawn from a space of 14, applied to
// the 8-bit image after crop, resize and mirror and before normalisation (torchvision's order:
// RandomResizedCrop, RandomHorizontalFlip, RandAugment, ToTensor, Normalize).
//
// The contract is torchvision 0.14's, on a PIL image with interpolation NEAREST and fill None:
//   space (torchvision's order): Identity, ShearX, ShearY, TranslateX, TranslateY, Rotate, Brightness,
//     Color, Contrast, Sharpness, Posterize, Solarize, AutoContrast, Equalize.
//   magnitude tables (_augmentation_space, bins = magnitude_bins), signed ops negated with probability
//     1/2 (S: signed):
//                     RandAugment                        TrivialAugmentWide
//     ShearX/Y      S linspace(0, 0.3)                   linspace(0, 0.99)      (shear = atan(m) rad)
//     TranslateX/Y  S linspace(0, 150/331 * width/height) linspace(0, 32)       (int(m) pixels)
//     Rotate        S linspace(0, 30)                    linspace(0, 135)       (degrees, anticlockwise)
//     Brightness, Color, Contrast, Sharpness
//                   S linspace(0, 0.9)                   linspace(0, 0.99)      (factor 1 + m)
//     Posterize       8 - round(i / ((bins-1)/4))        8 - round(i / ((bins-1)/6))   (bits kept)
//     Solarize        linspace(255, 0)                   linspace(255, 0)       (threshold)
//   RandAugment: num_ops ops, each uniform over the 14, all at bin `magnitude`. TrivialAugmentWide:
//     one op, uniform, at a uniform bin.
// The tables are float32 as torch.linspace computes them (torch_linspace below), because some ops
// truncate or compare the value (int(m) for Translate, v < m for Solarize) and a value one float
// below an integer would move a whole pixel. Each op then does what PIL 9.4 does with the magnitude
// (ImageEnhance, ImageOps, Image.transform/rotate in 16.16 fixed point), so that the same image and
// magnitude give the same bytes (tests/unit/pipeline/auto_augment_test.cpp, against torchvision's
// outputs). Images are 1 channel (PIL 'L': Color is then the identity) or 3 (PIL 'RGB'). The ops
// live in auto_augment_ops.cpp, the tables and the policies in auto_augment.cpp.
//
// Randomness: the ops and magnitudes of a sample come from its own counter-based stream (rng.h,
// RngStream::kAutoAugment): a function of (seed, epoch, index) only, so turning auto augmentation on
// changes no crop, mirror, colour or erasing draw, and a resumed run repeats the uninterrupted one.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fastnn::pipeline {

enum class AutoAugmentPolicy { kNone, kRandAugment, kTrivialAugmentWide };
// "" (none), "randaugment", "trivialaugmentwide"; ConfigError listing them otherwise.
AutoAugmentPolicy parse_auto_augment(std::string_view name);
const char* auto_augment_name(AutoAugmentPolicy policy);  // "" for kNone

struct AutoAugmentOptions {
  AutoAugmentPolicy policy = AutoAugmentPolicy::kNone;
  int num_ops = 2;          // RandAugment: ops per image
  int magnitude = 9;        // RandAugment: the bin every op uses, 0 .. magnitude_bins - 1
  int magnitude_bins = 31;  // both: entries of each magnitude table
};
// ConfigError unless the options are in range (bins 2..1000, magnitude 0..bins-1, num_ops 0..100).
void validate_auto_augment(const AutoAugmentOptions& options);

enum class AugmentOp : int {
  kIdentity, kShearX, kShearY, kTranslateX, kTranslateY, kRotate, kBrightness, kColor, kContrast,
  kSharpness, kPosterize, kSolarize, kAutoContrast, kEqualize
};
constexpr int kNumAugmentOps = 14;
const char* augment_op_name(AugmentOp op);  // torchvision's name, e.g. "ShearX"
bool augment_op_signed(AugmentOp op);

// torch.linspace(start, end, steps) in float32, value for value as torch 1.13's CPU kernel on an
// AVX2 build computes it (the ends meet in the middle, blocks of 8 from a fused multiply-add base).
std::vector<float> torch_linspace(float start, float end, int steps);

// The op's magnitude table for `policy` (empty for Identity, AutoContrast, Equalize), for an image of
// height × width (RandAugment's Translate depends on it).
std::vector<float> magnitude_table(AutoAugmentPolicy policy, AugmentOp op, int bins, int height, int width);

// An 8-bit image with interleaved channels (1 or 3), rows packed: width * channels bytes each.
struct Image8 {
  uint8_t* pixels = nullptr;
  int width = 0, height = 0, channels = 0;
};

// Applies `op` in place with `magnitude` as torchvision's _apply_op receives it (signed, the table's
// float value). `scratch` is the caller's buffer (grown as needed; a copy of the input for the
// geometric ops and Sharpness).
void apply_augment_op(AugmentOp op, double magnitude, const Image8& image, std::vector<uint8_t>& scratch);

struct AugmentStep {
  AugmentOp op = AugmentOp::kIdentity;
  int bin = -1;          // -1: the op has no magnitude
  bool negated = false;
  double magnitude = 0;  // the value applied
};

// A policy with its tables for one output size; const, shared by the pipeline's workers.
class AutoAugment {
 public:
  static constexpr int kMaxOps = 100;
  AutoAugment(const AutoAugmentOptions& options, int height, int width);  // validates

  bool enabled() const { return options_.policy != AutoAugmentPolicy::kNone; }
  // The steps of sample (seed, epoch, index): what apply() does to it. Returns how many (<= kMaxOps).
  int draw(uint64_t seed, int64_t epoch, uint64_t index, AugmentStep* steps) const;
  // Draws and applies the steps to `image` (height × width of the constructor).
  void apply(const Image8& image, uint64_t seed, int64_t epoch, uint64_t index, std::vector<uint8_t>& scratch) const;

 private:
  AutoAugmentOptions options_;
  int height_, width_;
  std::array<std::vector<float>, kNumAugmentOps> tables_;
};

}  // namespace fastnn::pipeline
