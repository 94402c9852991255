#include "pipeline/preset.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace fastnn::pipeline {
namespace {

// slim's _R_MEAN, _G_MEAN, _B_MEAN.
constexpr float kVggMean[3] = {123.68f, 116.78f, 103.94f};
// CIFAR-10 training-set channel means and standard deviations, in pixel units.
constexpr float kCifarMean[3] = {125.31f, 122.95f, 113.87f};
constexpr float kCifarStd[3] = {62.99f, 62.09f, 66.70f};
// torchvision's ImageNet normalisation (transforms.Normalize in its and timm's recipes), in pixel units.
constexpr float kImagenetMean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255};
constexpr float kImagenetStd[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};

// resize_with_crop_or_pad: the window of size `target` centred on (or centring) a side of `size`.
double crop_or_pad_offset(int size, int target) {
  return size >= target ? (size - target) / 2 : -((target - size) / 2);
}

// Python's round(), which torchvision's crop arithmetic uses: halves to even (the default rounding
// mode's nearbyint), where std::lround rounds them away from zero.
long round_half_even(double v) { return static_cast<long>(std::nearbyint(v)); }

// A random resized crop's tries: area U(area_min, area_max) of the image's, aspect log-uniform, up to
// max_attempts; the first that fits. `round` turns a side into pixels. False when none fitted.
template <typename Round>
bool draw_resized_crop(const PreprocessConfig& c, int width, int height, SampleRng& rng, Round round, Window& out) {
  const double area = double(width) * height;
  const double log_lo = std::log(double(c.aspect_min)), log_hi = std::log(double(c.aspect_max));
  for (int attempt = 0; attempt < c.max_attempts; ++attempt) {
    double target = area * (c.area_min + (c.area_max - c.area_min) * rng.uniform_double());
    double ratio = std::exp(log_lo + (log_hi - log_lo) * rng.uniform_double());
    long w = round(std::sqrt(target * ratio));
    long h = round(std::sqrt(target / ratio));
    if (w >= 1 && h >= 1 && w <= width && h <= height) {
      double x = double(rng.below(uint64_t(width - w + 1)));
      double y = double(rng.below(uint64_t(height - h + 1)));
      out = {x, y, double(w), double(h)};
      return true;
    }
  }
  return false;
}

// torchvision RandomResizedCrop's fallback after its tries: the whole image, cut down to the aspect
// range's nearer end, centred.
Window torchvision_fallback(const PreprocessConfig& c, int width, int height) {
  const double in_ratio = double(width) / height;
  long w = width, h = height;
  if (in_ratio < c.aspect_min) h = round_half_even(w / double(c.aspect_min));
  else if (in_ratio > c.aspect_max) w = round_half_even(h * double(c.aspect_max));
  return {double((width - w) / 2), double((height - h) / 2), double(w), double(h)};
}

// torchvision's Resize(side) then CenterCrop(out_h, out_w), as the window of the original image:
// the shorter side becomes `side`, the longer int(side * long / short) (truncated), and the crop's
// offsets are round((resized - crop) / 2) with halves to even.
Window torchvision_centre_crop(int width, int height, int side, int ow, int oh) {
  int nw = width, nh = height;
  if (std::min(width, height) != side) {
    if (width <= height) {
      nw = side;
      nh = static_cast<int>(double(side) * height / width);
    } else {
      nh = side;
      nw = static_cast<int>(double(side) * width / height);
    }
  }
  const long x = round_half_even((nw - ow) / 2.0), y = round_half_even((nh - oh) / 2.0);
  const double fx = double(width) / nw, fy = double(height) / nh;
  return {x * fx, y * fy, ow * fx, oh * fy};
}

}  // namespace

PresetKind parse_preset(std::string_view name) {
  if (name == "lenet") return PresetKind::kLenet;
  if (name == "cifarnet") return PresetKind::kCifarnet;
  if (name == "inception" || name == "inception_v1" || name == "inception_v2" || name == "inception_v3" ||
      name == "inception_v4" || name == "inception_resnet_v2")
    return PresetKind::kInception;
  if (name == "vgg" || name == "resnet" || name.starts_with("vgg_") || name.starts_with("resnet_v"))
    return PresetKind::kVgg;
  if (name == "torchvision") return PresetKind::kTorchvision;
  throw ConfigError(
      str("unknown preprocessing_name '", name, "' (choose lenet, cifarnet, inception, vgg, resnet, torchvision)"));
}

bool preset_resizes(PresetKind k) {
  return k == PresetKind::kInception || k == PresetKind::kVgg || k == PresetKind::kTorchvision;
}

PreprocessConfig resolve_preset(const PreprocessConfig& in) {
  PreprocessConfig c = in;
  PresetKind k = parse_preset(c.preset);
  int size = k == PresetKind::kLenet ? 28 : k == PresetKind::kCifarnet ? 32 : 224;
  if (c.height == 0) c.height = size;
  if (c.width == 0) c.width = c.height;
  if (c.channels == 0) c.channels = k == PresetKind::kLenet ? 1 : 3;
  if (c.height < 1 || c.width < 1 || c.height > 16384 || c.width > 16384)
    throw ConfigError(str("preprocess: output size ", c.height, "x", c.width, " out of range"));
  if (c.channels != 1 && c.channels != 3)
    throw ConfigError(str("preprocess: channels ", c.channels, " (1 or 3)"));
  if (!(c.erase.prob >= 0 && c.erase.prob <= 1))
    throw ConfigError(str("random_erase_prob must be in [0, 1], not ", c.erase.prob));
  validate_auto_augment(c.auto_augment);
  if (c.color_distortion && k != PresetKind::kInception)
    throw ConfigError(str("color_distortion is the inception preset's (TF-slim's distort_color); the ", c.preset,
                          " preset has no colour distortion"));
  auto fill = [&](std::vector<float>& v, const float* preset3, float preset1, const char* what) {
    if (v.empty()) {
      for (int i = 0; i < c.channels; ++i) v.push_back(preset3 ? (c.channels == 3 ? preset3[i] : preset3[0]) : preset1);
    } else if (v.size() == 1) {
      v.assign(c.channels, v[0]);
    } else if (static_cast<int>(v.size()) != c.channels) {
      throw ConfigError(str("preprocess: ", v.size(), " ", what, " values for ", c.channels, " channels"));
    }
  };
  switch (k) {
    case PresetKind::kLenet: fill(c.mean, nullptr, 128.0f, "mean"); fill(c.std, nullptr, 128.0f, "std"); break;
    case PresetKind::kCifarnet: {
      float gray_mean = (kCifarMean[0] + kCifarMean[1] + kCifarMean[2]) / 3;
      float gray_std = (kCifarStd[0] + kCifarStd[1] + kCifarStd[2]) / 3;
      fill(c.mean, c.channels == 3 ? kCifarMean : nullptr, gray_mean, "mean");
      fill(c.std, c.channels == 3 ? kCifarStd : nullptr, gray_std, "std");
      break;
    }
    case PresetKind::kInception: fill(c.mean, nullptr, 127.5f, "mean"); fill(c.std, nullptr, 127.5f, "std"); break;
    case PresetKind::kVgg: {
      float gray = (kVggMean[0] + kVggMean[1] + kVggMean[2]) / 3;
      fill(c.mean, c.channels == 3 ? kVggMean : nullptr, gray, "mean");
      fill(c.std, nullptr, 1.0f, "std");
      break;
    }
    case PresetKind::kTorchvision: {
      fill(c.mean, c.channels == 3 ? kImagenetMean : nullptr,
           (kImagenetMean[0] + kImagenetMean[1] + kImagenetMean[2]) / 3, "mean");
      fill(c.std, c.channels == 3 ? kImagenetStd : nullptr, (kImagenetStd[0] + kImagenetStd[1] + kImagenetStd[2]) / 3,
           "std");
      break;
    }
  }
  for (float s : c.std)
    if (!(s > 0)) throw ConfigError("preprocess: std values must be > 0");
  const bool resized_crop = k == PresetKind::kInception || k == PresetKind::kTorchvision;
  const bool set_crop = c.area_min != 0 || c.area_max != 0 || c.aspect_min != 0 || c.aspect_max != 0;
  if (set_crop && !resized_crop)
    throw ConfigError(str("the random resized crop's area and aspect ranges are the inception and torchvision presets'; the ",
                          c.preset, " preset draws no such crop"));
  if (c.area_min == 0) c.area_min = k == PresetKind::kTorchvision ? 0.08f : 0.05f;
  if (c.area_max == 0) c.area_max = 1.0f;
  if (c.aspect_min == 0) c.aspect_min = 0.75f;
  if (c.aspect_max == 0) c.aspect_max = 4.0f / 3.0f;
  if (!(c.area_min > 0 && c.area_min <= c.area_max && c.area_max <= 1))
    throw ConfigError(str("preprocess: area range [", c.area_min, ", ", c.area_max, "] must lie in (0, 1]"));
  if (!(c.aspect_min > 0 && c.aspect_min <= c.aspect_max))
    throw ConfigError("preprocess: aspect range must satisfy 0 < min <= max");
  if (c.crop_pct != 0 && !preset_resizes(k))
    throw ConfigError(str("crop_pct is the share of a resized image the evaluation crop keeps; the ", c.preset,
                          " preset does not resize"));
  if (!(c.crop_pct >= 0 && c.crop_pct <= 1)) throw ConfigError(str("crop_pct must lie in (0, 1], not ", c.crop_pct));
  if (k == PresetKind::kTorchvision || (k == PresetKind::kVgg && c.crop_pct != 0)) {
    if (c.crop_pct == 0) c.crop_pct = 0.875;
    c.eval_resize = static_cast<int>(std::floor(std::max(c.height, c.width) / c.crop_pct));
  } else if (k == PresetKind::kInception && c.crop_pct == 0) {
    c.crop_pct = 0.875;
  }
  if (c.max_attempts < 1) throw ConfigError("preprocess: max_attempts must be >= 1");
  if (c.padding < 0) throw ConfigError("preprocess: padding must be >= 0");
  if (k == PresetKind::kVgg) {
    int need = std::max(c.height, c.width);
    if (c.resize_min < 1 || c.resize_min > c.resize_max)
      throw ConfigError(str("preprocess: resize range [", c.resize_min, ", ", c.resize_max, "]"));
    if (c.resize_min < need || c.eval_resize < need)
      throw ConfigError(str("preprocess: the shorter side is resized to ", std::min(c.resize_min, c.eval_resize),
                            ", smaller than the ", c.height, "x", c.width, " crop"));
  }
  return c;
}

OutputFormat output_format(const PreprocessConfig& c) {
  // What the sample writers (resample.cpp, random_erase.cpp, mixup.cpp) store; they switch over these.
  if (c.dtype != DType::kU8 && c.dtype != DType::kF32 && c.dtype != DType::kF16)
    throw ConfigError(str("batch dtype ", dtype_name(c.dtype), ": a batch holds uint8, float32 or float16"));
  if (c.layout != Layout::kNHWC && c.layout != Layout::kNCHW)
    throw ConfigError(str("batch layout ", layout_name(c.layout), ": a batch is NHWC or NCHW"));
  OutputFormat f;
  f.spec = {c.height, c.width, c.channels, c.dtype, c.layout};
  for (int i = 0; i < c.channels; ++i) {
    f.mean[i] = c.mean[i];
    f.inv_std[i] = 1.0f / c.std[i];
  }
  f.pad_value = 0.0f;
  return f;
}

SamplePlan plan_sample(const PreprocessConfig& c, int width, int height, uint64_t seed, int64_t epoch,
                       uint64_t index) {
  SamplePlan p;
  const PresetKind kind = parse_preset(c.preset);
  SampleRng rng(seed, static_cast<uint64_t>(epoch), index, RngStream::kAugment);
  const int ow = c.width, oh = c.height;
  switch (kind) {
    case PresetKind::kLenet:
      p.window = {crop_or_pad_offset(width, ow), crop_or_pad_offset(height, oh), double(ow), double(oh)};
      break;
    case PresetKind::kCifarnet:
      if (!c.train) {
        p.window = {crop_or_pad_offset(width, ow), crop_or_pad_offset(height, oh), double(ow), double(oh)};
        break;
      } else {
        // Random crop of the padded image; a padded side smaller than the output is centre-padded.
        int pw = width + 2 * c.padding, ph = height + 2 * c.padding;
        double x = pw >= ow ? double(rng.below(uint64_t(pw - ow + 1))) : crop_or_pad_offset(pw, ow);
        double y = ph >= oh ? double(rng.below(uint64_t(ph - oh + 1))) : crop_or_pad_offset(ph, oh);
        p.window = {x - c.padding, y - c.padding, double(ow), double(oh)};
        p.flip = rng.coin();
      }
      break;
    case PresetKind::kInception:
      if (!c.train) {
        // tf.image.central_crop: start = int((size - size * fraction) / 2), extent = size - 2 * start.
        int sx = static_cast<int>((width - width * c.crop_pct) / 2);
        int sy = static_cast<int>((height - height * c.crop_pct) / 2);
        p.window = {double(sx), double(sy), double(width - 2 * sx), double(height - 2 * sy)};
        break;
      } else {
        p.window = {0, 0, double(width), double(height)};
        draw_resized_crop(c, width, height, rng, [](double v) { return std::lround(v); }, p.window);
        p.flip = rng.coin();
        if (c.color_distortion) {
          SampleRng crng(seed, static_cast<uint64_t>(epoch), index, RngStream::kColor);
          p.color.enabled = true;
          p.color.brightness = crng.uniform(-32.0f, 32.0f);
          p.color.saturation = crng.uniform(0.5f, 1.5f);
        }
      }
      break;
    case PresetKind::kVgg: {
      int side = c.train ? c.resize_min + static_cast<int>(rng.below(uint64_t(c.resize_max - c.resize_min + 1)))
                         : c.eval_resize;
      double scale = double(side) / std::min(width, height);
      int nw = std::max(ow, static_cast<int>(std::rint(width * scale)));
      int nh = std::max(oh, static_cast<int>(std::rint(height * scale)));
      int x, y;
      if (c.train) {
        x = static_cast<int>(rng.below(uint64_t(nw - ow + 1)));
        y = static_cast<int>(rng.below(uint64_t(nh - oh + 1)));
        p.flip = rng.coin();
      } else {
        x = (nw - ow) / 2;
        y = (nh - oh) / 2;
      }
      // The crop of the resized image, expressed in the original's coordinates.
      double fx = double(width) / nw, fy = double(height) / nh;
      p.window = {x * fx, y * fy, ow * fx, oh * fy};
      break;
    }
    case PresetKind::kTorchvision:
      if (!c.train) {
        p.window = torchvision_centre_crop(width, height, c.eval_resize, ow, oh);
      } else {
        if (!draw_resized_crop(c, width, height, rng, round_half_even, p.window))
          p.window = torchvision_fallback(c, width, height);
        p.flip = rng.coin();
      }
      break;
  }
  return p;
}

}  // namespace fastnn::pipeline
