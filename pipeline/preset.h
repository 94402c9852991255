// Preprocessing presets by FastNN's preprocessing_name, and the per-sample geometry they draw.
//
//   lenet      train = eval: centre crop or zero-pad to the output size (resize_with_crop_or_pad);
//              values (v − 128) / 128, i.e. [-1, 1) (or the given mean/std).
//   cifarnet   train: zero-pad `padding` (4) pixels, random crop to the output size, random mirror;
//              eval: centre crop/pad. Per-channel mean/std (CIFAR-10's by default).
//   inception  train: random resized crop — area fraction U(area_min, area_max) = U(0.05, 1), aspect
//              ratio log-uniform in [3/4, 4/3], up to max_attempts (10) tries, else the whole image —
//              bilinear resize to the output size, random mirror, optional colour distortion
//              (brightness ±32, saturation ×[0.5, 1.5]; slim's fast mode, luma-blend saturation);
//              eval: central crop of central_fraction (87.5%) resized to the output size.
//              Values (v − 127.5) / 127.5, i.e. [-1, 1].
//   vgg,       train: aspect-preserving resize of the shorter side to U{resize_min..resize_max} =
//   resnet     U{256..512}, random crop of the output size, random mirror; eval: shorter side to
//              eval_resize (256), centre crop. Values v − (123.68, 116.78, 103.94) (slim's means).
// Default output size: lenet 28, cifarnet 32, inception/vgg/resnet 224; channels: lenet 1, else 3.
//
// Every random draw comes from SampleRng(seed, epoch, index): a sample's crop does not depend on
// thread scheduling; eval variants draw nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/image.h"
#include "pipeline/auto_augment.h"
#include "pipeline/batch.h"
#include "pipeline/random_erase.h"
#include "pipeline/resample.h"
#include "pipeline/rng.h"

namespace fastnn::pipeline {

enum class PresetKind { kLenet, kCifarnet, kInception, kVgg };

struct PreprocessConfig {
  std::string preset = "inception";  // lenet, cifarnet, inception, vgg, resnet
  bool train = true;
  int height = 0;    // 0: the preset's default
  int width = 0;
  int channels = 0;  // 0: the preset's default
  DType dtype = DType::kF32;
  Layout layout = Layout::kNHWC;
  std::vector<float> mean;  // empty: the preset's; else one value or one per channel
  std::vector<float> std;
  bool color_distortion = false;  // inception, train only
  EraseOptions erase;             // random erasing of training images (random_erase.h); any preset
  AutoAugmentOptions auto_augment;  // RandAugment / TrivialAugmentWide on training images (auto_augment.h)
  // inception
  float area_min = 0.05f, area_max = 1.0f;
  float aspect_min = 0.75f, aspect_max = 4.0f / 3.0f;
  int max_attempts = 10;
  float central_fraction = 0.875f;
  // vgg / resnet
  int resize_min = 256, resize_max = 512, eval_resize = 256;
  // cifarnet
  int padding = 4;
  // JPEG: decode only the window the crop needs, and at 1/2, 1/4, 1/8 scale (in the IDCT) when the
  // window is downscaled at least that much anyway.
  bool crop_decode = true;
  bool dct_scale = true;
  std::string label_key = "image/class/label";
  int64_t label_offset = 0;  // subtracted from every label (FastNN's labels_offset); a result < 0 is an error
  ImageLimits limits;
};

PresetKind parse_preset(std::string_view name);  // ConfigError listing the presets otherwise
// The config with every preset default filled in (size, channels, mean/std); validates the rest.
PreprocessConfig resolve_preset(const PreprocessConfig& config);
// The output format (shape, dtype, layout, normalisation) of a resolved config.
OutputFormat output_format(const PreprocessConfig& resolved);

// What one sample gets: the window of the full-size image that becomes the output, the mirror, the
// colour jitter.
struct SamplePlan {
  Window window;  // full-image pixel coordinates
  bool flip = false;
  ColorJitter color;
};

// Draws a sample's plan for an image of width × height. `resolved` comes from resolve_preset.
SamplePlan plan_sample(const PreprocessConfig& resolved, int width, int height, uint64_t seed, int64_t epoch,
                       uint64_t index);

}  // namespace fastnn::pipeline
