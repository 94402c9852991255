// Preprocessing presets by FastNN's preprocessing_name, and the per-sample geometry they draw.
//
//   lenet      train = eval: centre crop or zero-pad to the output size (resize_with_crop_or_pad);
//              values (v − 128) / 128, i.e. [-1, 1) (or the given mean/std).
//   cifarnet   train: zero-pad `padding` (4) pixels, random crop to the output size, random mirror;
//              eval: centre crop/pad. Per-channel mean/std (CIFAR-10's by default).
//   inception  train: random resized crop — area fraction U(area_min, area_max) = U(0.05, 1), aspect
//              ratio log-uniform in [aspect_min, aspect_max] = [3/4, 4/3], up to max_attempts (10)
//              tries, else the whole image — bilinear resize to the output size, random mirror,
//              optional colour distortion (brightness ±32, saturation ×[0.5, 1.5]; slim's fast
//              mode, luma-blend saturation); eval: central crop of crop_pct (87.5%) of each side
//              (tf.image.central_crop) resized to the output size. Values (v − 127.5) / 127.5.
//   vgg,       train: aspect-preserving resize of the shorter side to U{resize_min..resize_max} =
//   resnet     U{256..512}, random crop of the output size, random mirror; eval: shorter side to
//              eval_resize (256; floor(size / crop_pct) when crop_pct is given), centre crop.
//              Values v − (123.68, 116.78, 103.94) (slim's means).
//   torchvision  torchvision's ImageNet transforms, the recipe of its and timm's models and of
//              MLPerf's ResNet-50: train RandomResizedCrop(scale (0.08, 1), ratio (3/4, 4/3)) —
//              the inception draw with torchvision's rounding and, after 10 failed tries, its
//              fallback: the centred crop of the whole image clamped to the aspect range — and
//              RandomHorizontalFlip; eval Resize(floor(size / crop_pct)) (crop_pct 0.875: 256 for
//              224), CenterCrop(size), with torchvision's rounding of both. Values (v/255 − mean) /
//              std with ImageNet's mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225).
//              Resampling is fastnn's bilinear (below), not PIL's antialiased filter.
// Default output size: lenet 28, cifarnet 32, inception/vgg/resnet/torchvision 224; channels: lenet
// 1, else 3. A 1-channel image gets the mean of a preset's three means and deviations.
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

enum class PresetKind { kLenet, kCifarnet, kInception, kVgg, kTorchvision };

struct PreprocessConfig {
  std::string preset = "inception";  // lenet, cifarnet, inception, vgg, resnet, torchvision
  bool train = true;
  int height = 0;    // 0: the preset's default
  int width = 0;
  int channels = 0;  // 0: the preset's default
  DType dtype = DType::kF32;
  Layout layout = Layout::kNHWC;
  std::vector<float> mean;  // pixel units; empty: the preset's; else one value or one per channel
  std::vector<float> std;
  bool color_distortion = false;  // inception, train only
  EraseOptions erase;             // random erasing of training images (random_erase.h); any preset
  AutoAugmentOptions auto_augment;  // RandAugment / TrivialAugmentWide on training images (auto_augment.h)
  // inception, torchvision: the random resized crop (0: the preset's)
  float area_min = 0, area_max = 0;
  float aspect_min = 0, aspect_max = 0;
  int max_attempts = 10;
  // inception, vgg / resnet, torchvision: the evaluation crop's share of each side (0: the preset's;
  // timm's crop_pct, TF-slim's central_fraction)
  double crop_pct = 0;
  // vgg / resnet; eval_resize is derived from crop_pct for torchvision and when crop_pct is given
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
// Whether the preset resamples images to its output size (the others crop or pad them).
bool preset_resizes(PresetKind kind);
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
