#include "trainer/loop/input_geometry.h"

#include <algorithm>
#include <array>

#include "core/example.h"
#include "core/tfrecord.h"
#include "pipeline/preset.h"

namespace fastnn::loop {
namespace {

struct SizeRange {
  int64_t min_h = 0, max_h = 0, min_w = 0, max_w = 0;
  int64_t records = 0;  // 0: unknown
  bool all = false;     // from the manifest (every record)
};

// The image sizes of up to `n` records of the first training file.
SizeRange sample_sizes(const RunSetup& s, int n) {
  SizeRange r;
  if (s.manifest.image.height > 0 && s.manifest.image.width > 0) {
    r.min_h = r.max_h = s.manifest.image.height;
    r.min_w = r.max_w = s.manifest.image.width;
    r.records = 1;
    r.all = true;
    return r;
  }
  if (s.train_files.files.empty()) return r;
  try {
    const std::string& path = s.train_files.files.front().path;
    TFRecordReader reader(path, {.compression = detect_compression(path)});
    const ExampleParser parser({keys::kHeight, keys::kWidth});
    std::array<FeatureView, 2> v;
    std::string_view rec;
    for (int i = 0; i < n && reader.next(&rec); ++i) {
      parser.parse(rec, v);
      if (v[0].kind() == FeatureView::Kind::kMissing || v[1].kind() == FeatureView::Kind::kMissing) continue;
      const int64_t h = v[0].single_int64(keys::kHeight), w = v[1].single_int64(keys::kWidth);
      if (r.records == 0) r.min_h = r.max_h = h, r.min_w = r.max_w = w;
      r.min_h = std::min(r.min_h, h), r.max_h = std::max(r.max_h, h);
      r.min_w = std::min(r.min_w, w), r.max_w = std::max(r.max_w, w);
      ++r.records;
    }
  } catch (const Error&) {
    r.records = 0;  // the training pipeline reports a bad file itself, with its offset
  }
  return r;
}

std::string range_text(int64_t lo, int64_t hi) { return lo == hi ? str(lo) : str(lo, "-", hi); }

}  // namespace

InputGeometry describe_input_geometry(const RunSetup& s) {
  InputGeometry g;
  const std::string in = str(s.height, "x", s.width);
  const pipeline::PreprocessConfig p = pipeline::resolve_preset(preprocess_config(s, true));
  const pipeline::PresetKind kind = pipeline::parse_preset(s.preset);
  const bool resamples = pipeline::preset_resizes(kind);
  const std::string crop_area = str(p.area_min * 100, "-", p.area_max * 100, "%");
  switch (kind) {
    case pipeline::PresetKind::kLenet:
      g.line = str("preprocessing ", s.preset, ": centre crop or zero-pad to ", in, ", no resizing");
      break;
    case pipeline::PresetKind::kCifarnet:
      g.line = str("preprocessing ", s.preset, ": random ", in, " crop of the image padded by 4, random mirror (eval: centre crop), no resizing");
      break;
    case pipeline::PresetKind::kInception:
      g.line = str("preprocessing ", s.preset, ": random resized crop (", crop_area, " of the area) to ", in,
                   ", random mirror",
                   !s.color_distortion ? ""
                   : s.channels == 3   ? ", colour distortion (brightness, saturation)"
                                       : ", colour distortion (brightness; saturation needs colour)",
                   " (eval: central ", p.crop_pct * 100, "% resized to ", in, ")");
      break;
    case pipeline::PresetKind::kVgg:
      g.line = str("preprocessing ", s.preset, ": shorter side resized to ", p.resize_min, "-", p.resize_max, ", random ",
                   in, " crop, random mirror (eval: shorter side ", p.eval_resize, ", centre crop)");
      break;
    case pipeline::PresetKind::kTorchvision:
      g.line = str("preprocessing ", s.preset, ": RandomResizedCrop (", crop_area, " of the area) to ", in,
                   ", random mirror (eval: shorter side ", p.eval_resize, ", centre crop ", in, ")");
      break;
  }
  if (const std::string own = evaluation_fields_text(s.preset_fields); !own.empty()) g.line += "; the job's " + own;
  if (s.auto_augment.policy == pipeline::AutoAugmentPolicy::kRandAugment)
    g.line += str("; RandAugment of training images (", s.auto_augment.num_ops, " ops at magnitude ",
                  s.auto_augment.magnitude, " of 0-", s.auto_augment.magnitude_bins - 1, ")");
  else if (s.auto_augment.policy == pipeline::AutoAugmentPolicy::kTrivialAugmentWide)
    g.line += str("; TrivialAugmentWide of training images (", s.auto_augment.magnitude_bins, " magnitude bins)");
  if (s.erase.prob > 0)
    g.line += str("; random erasing of training images (p ", s.erase.prob, ", ", pipeline::erase_mode_name(s.erase.mode),
                  ")");
  if (s.mix.enabled()) {
    const pipeline::MixOptions& m = s.mix;
    const std::string mixup = m.mixup_alpha > 0 ? str("mixup (alpha ", m.mixup_alpha, ")") : "";
    const std::string cutmix = m.cutmix_alpha > 0 ? str("CutMix (alpha ", m.cutmix_alpha, ")") : "";
    g.line += str("; ", !mixup.empty() && !cutmix.empty() ? str(mixup, " or ", cutmix, ", CutMix at p ", m.switch_prob)
                                                          : mixup + cutmix,
                  m.mode == pipeline::MixMode::kBatch ? " of training batches"
                  : m.mode == pipeline::MixMode::kPair ? " of each pair of partners in training batches"
                                                       : " of each training image",
                  m.prob < 1 ? str(" (p ", m.prob, ")") : "",
                  m.off_epoch > 0 ? str(" until epoch ", m.off_epoch) : "", ", labels mixed alike");
  }
  const SizeRange r = sample_sizes(s, 64);
  if (r.records == 0) return g;
  g.line += str("; images ", range_text(r.min_h, r.max_h), "x", range_text(r.min_w, r.max_w),
                r.all ? " (every record)" : str(" (the first ", r.records, " records)"));
  const int64_t side = std::min(r.min_h, r.min_w);
  if (!resamples && std::max(r.max_h, r.max_w) > 2 * std::max(s.height, s.width)) {
    const double kept = static_cast<double>(s.height) * s.width / (static_cast<double>(r.max_h) * r.max_w);
    g.warning = str("the ", s.preset, " preset does not resize: each ", r.max_h, "x", r.max_w, " image becomes a ", in,
                    " crop of it (", kept < 0.01 ? "under 1" : str(static_cast<int>(100 * kept + 0.5)),
                    "% of its area); resize the images when converting, or train with preprocessing_name=inception "
                    "(random resized crops), or a larger train_image_size");
  } else if (resamples && side * 2 < std::min(s.height, s.width)) {
    g.warning = str("images of ", range_text(r.min_h, r.max_h), "x", range_text(r.min_w, r.max_w), " are blown up to ", in,
                    " (more than 2x); a smaller train_image_size fits them better");
  }
  return g;
}

}  // namespace fastnn::loop
