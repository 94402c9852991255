#include "pipeline/preprocess.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/clock.h"
#include "core/example.h"
#include "core/image.h"
#include "core/image_jpeg_crop.h"

namespace fastnn::pipeline {
namespace {

enum Key { kEncoded, kFormat, kLabel, kHeight, kWidth, kChannels, kNumKeys };

// Gray/RGB/RGBA conversions for raw records (PNG and JPEG decoders convert themselves).
void convert_raw(const uint8_t* src, int sc, uint8_t* dst, int dc, size_t n) {
  for (size_t i = 0; i < n; ++i, src += sc, dst += dc) {
    if (dc == 1) {
      dst[0] = sc == 1 ? src[0]
                       : static_cast<uint8_t>((src[0] * 19595u + src[1] * 38470u + src[2] * 7471u + 32768u) >> 16);
    } else {
      for (int c = 0; c < 3; ++c) dst[c] = sc == 1 ? src[0] : src[c];
    }
  }
}

// The format auto augmentation's image is resampled into: the output's size, 8 bits, HWC (the resampler
// rounds and clamps, and does not normalise, a uint8 output).
OutputFormat uint8_hwc(OutputFormat f) {
  f.spec.dtype = DType::kU8;
  f.spec.layout = Layout::kNHWC;
  f.stream_stores = false;  // the ops read it straight back
  return f;
}

// Decoded pixels: grows to the largest image seen, never shrinks, and (unlike vector::resize) does
// not zero what the decoder is about to overwrite.
class PixelBuffer {
 public:
  uint8_t* get(size_t n) {
    if (n > capacity_) {
      data_.reset(new uint8_t[n]);
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

class Preprocessor final : public SampleMapper {
 public:
  explicit Preprocessor(const PreprocessConfig& config)
      : cfg_(resolve_preset(config)),
        fmt_(output_format(cfg_)),
        augment_(cfg_.train ? cfg_.auto_augment : AutoAugmentOptions{}, cfg_.height, cfg_.width),
        parser_({keys::kImageEncoded, keys::kImageFormat, cfg_.label_key, keys::kHeight, keys::kWidth,
                 keys::kChannels}) {}

  BatchSpec spec() const override { return fmt_.spec; }

  void prepare(int num_workers) override {
    workers_.clear();
    for (int i = 0; i < num_workers; ++i) workers_.push_back(std::make_unique<Worker>());
  }

  void map(std::string_view record, const SampleContext& ctx, void* slot, int32_t* label) override {
    FASTNN_CHECK(ctx.worker >= 0 && ctx.worker < static_cast<int>(workers_.size()), "worker index ", ctx.worker,
                 " out of range (prepare(", workers_.size(), "))");
    Worker& w = *workers_[static_cast<size_t>(ctx.worker)];
    StageTimes* times = ctx.times;
    uint64_t t0 = now_ns();

    FeatureView f[kNumKeys];
    parser_.parse(record, std::span<FeatureView>(f, kNumKeys));
    if (!f[kLabel].present()) throw FormatError(str("no ", cfg_.label_key, " feature"));
    const int64_t stored = f[kLabel].single_int64(cfg_.label_key);
    const int64_t lab = stored - cfg_.label_offset;
    if (lab < 0 || lab > std::numeric_limits<int32_t>::max())
      throw FormatError(cfg_.label_offset == 0
                            ? str(cfg_.label_key, " ", stored, " is out of range (0 .. 2^31-1)")
                            : str(cfg_.label_key, " ", stored, " minus labels_offset ", cfg_.label_offset,
                                  " is out of range (0 .. 2^31-1)"));
    *label = static_cast<int32_t>(lab);
    if (!f[kEncoded].present()) throw FormatError(str("no ", keys::kImageEncoded, " feature"));
    std::string_view encoded = f[kEncoded].single_bytes(keys::kImageEncoded);
    std::string_view format = f[kFormat].present() ? f[kFormat].single_bytes(keys::kImageFormat) : "";
    uint64_t t1 = now_ns();

    ImageView view;
    Window window;
    SamplePlan plan;
    const int C = cfg_.channels;
    if (format == "raw") {
      int64_t h = f[kHeight].present() ? f[kHeight].single_int64(keys::kHeight) : -1;
      int64_t wd = f[kWidth].present() ? f[kWidth].single_int64(keys::kWidth) : -1;
      int64_t c = f[kChannels].present() ? f[kChannels].single_int64(keys::kChannels) : -1;
      if (h < 1 || wd < 1 || h > cfg_.limits.max_side || wd > cfg_.limits.max_side || h * wd > cfg_.limits.max_pixels)
        throw FormatError(str("raw image ", wd, "x", h, " missing or over the limits"));
      if (c != 1 && c != 3 && c != 4) throw FormatError(str("raw image with ", c, " channels (1, 3 or 4)"));
      if (static_cast<int64_t>(encoded.size()) != h * wd * c)
        throw FormatError(str("raw image ", wd, "x", h, "x", c, " needs ", h * wd * c, " bytes, has ", encoded.size()));
      plan = plan_sample(cfg_, static_cast<int>(wd), static_cast<int>(h), ctx.seed, ctx.epoch, ctx.index);
      window = plan.window;
      if (c == C) {
        view = {reinterpret_cast<const uint8_t*>(encoded.data()), static_cast<int>(wd), static_cast<int>(h), C,
                static_cast<size_t>(wd * c)};
      } else {
        size_t n = static_cast<size_t>(h * wd);
        uint8_t* px = w.pixels.get(n * C);
        convert_raw(reinterpret_cast<const uint8_t*>(encoded.data()), static_cast<int>(c), px, C, n);
        view = {px, static_cast<int>(wd), static_cast<int>(h), C, static_cast<size_t>(wd) * C};
      }
    } else {
      ImageFormat kind = detect_image_format(encoded);
      if (kind == ImageFormat::kJpeg) {
        ImageInfo info = w.jpeg.read_header(encoded, cfg_.limits);
        plan = plan_sample(cfg_, info.width, info.height, ctx.seed, ctx.epoch, ctx.index);
        if (info.channels == 4) {  // CMYK: TurboJPEG converts, whole image
          full_decode(encoded, info, &w, &view);
          window = plan.window;
        } else {
          jpeg_decode(encoded, info, plan, &w, &view, &window);
        }
      } else if (kind == ImageFormat::kPng) {
        ImageInfo info = read_image_info(encoded, cfg_.limits);
        plan = plan_sample(cfg_, info.width, info.height, ctx.seed, ctx.epoch, ctx.index);
        full_decode(encoded, info, &w, &view);
        window = plan.window;
      } else {
        throw FormatError(str("image/encoded is neither PNG nor JPEG (format '", format.substr(0, 16), "')"));
      }
    }
    uint64_t t2 = now_ns();
    if (augment_.enabled()) {
      augment_into(view, window, plan, ctx, &w, slot);
    } else {
      w.resampler.run(view, window, plan.flip, plan.color, fmt_, slot);
    }
    if (cfg_.train) erase_sample(cfg_.erase, fmt_, ctx.seed, ctx.epoch, ctx.index, slot);
    uint64_t t3 = now_ns();
    times->parse_ns += t1 - t0;
    times->decode_ns += t2 - t1;
    times->augment_ns += t3 - t2;
    times->bytes += encoded.size();
  }

 private:
  struct Worker {
    JpegCropDecoder jpeg;
    PixelBuffer pixels;
    Resampler resampler;
    std::vector<uint8_t> augmented;  // the output-size uint8 image auto augmentation works on
    std::vector<uint8_t> augment_scratch;
  };

  // torchvision's order: the ops see the 8-bit image after crop, resize, mirror (and colour jitter),
  // as RandAugment sees the PIL image; normalisation and the batch's dtype and layout come after.
  // The resampler does both ends: first into a uint8 HWC image, then, in copy mode (a window of exactly
  // the output size), from it into the slot, the same conversion it applies to any image.
  void augment_into(const ImageView& view, const Window& window, const SamplePlan& plan, const SampleContext& ctx,
                    Worker* w, void* slot) {
    const int H = fmt_.spec.height, W = fmt_.spec.width, C = fmt_.spec.channels;
    w->augmented.resize(static_cast<size_t>(H) * W * C);
    w->resampler.run(view, window, plan.flip, plan.color, augment_fmt_, w->augmented.data());
    augment_.apply({w->augmented.data(), W, H, C}, ctx.seed, ctx.epoch, ctx.index, w->augment_scratch);
    const ImageView augmented = {w->augmented.data(), W, H, C, static_cast<size_t>(W) * C};
    w->resampler.run(augmented, Window{0, 0, double(W), double(H)}, false, ColorJitter{}, fmt_, slot);
  }

  void full_decode(std::string_view encoded, const ImageInfo& info, Worker* w, ImageView* view) const {
    const int C = cfg_.channels;
    const size_t n = static_cast<size_t>(info.width) * info.height * C;
    uint8_t* px = w->pixels.get(n);
    decode_image_into(encoded, C, px, n, cfg_.limits);
    *view = {px, info.width, info.height, C, static_cast<size_t>(info.width) * C};
  }

  // Decodes what the plan needs of a JPEG: the whole image for a copy-mode plan; else the window
  // (plus bilinear margin) at the coarsest DCT scale that keeps it at least the output size.
  void jpeg_decode(std::string_view encoded, const ImageInfo& info, const SamplePlan& plan, Worker* w,
                   ImageView* view, Window* window) const {
    const int C = cfg_.channels, ow = cfg_.width, oh = cfg_.height;
    const Window& win = plan.window;
    const bool copy = Resampler::copy_mode(win, ow, oh);
    int d = 1;
    if (cfg_.dct_scale && !copy)
      for (int cand : {8, 4, 2})
        if (win.w / cand >= ow && win.h / cand >= oh) {
          d = cand;
          break;
        }
    const int sw = jpeg_dim_at_scale(info.width, d), sh = jpeg_dim_at_scale(info.height, d);
    Window ws = {win.x0 / d, win.y0 / d, win.w / d, win.h / d};
    int rx0 = 0, ry0 = 0, rx1 = sw, ry1 = sh;
    if (cfg_.crop_decode && !copy) {
      // The bilinear taps of the first and last output pixels bound the region read.
      auto range = [](double x0, double extent, int out, int size, int* lo, int* hi) {
        double scale = extent / out;
        double first = x0 + 0.5 * scale - 0.5, last = x0 + (out - 0.5) * scale - 0.5;
        *lo = std::clamp(static_cast<int>(std::floor(first)), 0, size - 1);
        *hi = std::clamp(static_cast<int>(std::floor(last)) + 2, *lo + 1, size);
      };
      range(ws.x0, ws.w, ow, sw, &rx0, &rx1);
      range(ws.y0, ws.h, oh, sh, &ry0, &ry1);
    }
    const int rw = rx1 - rx0, rh = ry1 - ry0;
    const size_t n = static_cast<size_t>(rw) * rh * C;
    uint8_t* px = w->pixels.get(n);
    w->jpeg.decode_window(encoded, d, rx0, ry0, rw, rh, C, px, n, cfg_.limits);
    *view = {px, rw, rh, C, static_cast<size_t>(rw) * C};
    *window = copy ? win : Window{ws.x0 - rx0, ws.y0 - ry0, ws.w, ws.h};
  }

  PreprocessConfig cfg_;
  OutputFormat fmt_;
  AutoAugment augment_;  // disabled for evaluation mappers
  OutputFormat augment_fmt_ = uint8_hwc(fmt_);
  ExampleParser parser_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace

std::shared_ptr<SampleMapper> make_preprocessor(const PreprocessConfig& config) {
  return std::make_shared<Preprocessor>(config);
}

}  // namespace fastnn::pipeline
