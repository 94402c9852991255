// The map function of a training or evaluation pipeline: tf.train.Example record → parsed label and
// image → decoded (only the pixels the crop needs) → augmented by a preset (pipeline/preset.h) →
// written into the sample's slot of the batch.
//
// Records: fastnn's keys (core/example.h): image/encoded, image/format ("png", "jpeg" or "raw";
// PNG and JPEG are also recognised by their magic bytes), the label (label_key, int64, must fit in
// int32), and for "raw" image/height, image/width, image/channels (raw bytes must be exactly
// h × w × c; read in place, no copy). Images are converted to the preset's channel count.
//
// JPEG: for an interpolated crop the decoder reads the crop window only (plus a one-pixel margin
// for the bilinear taps) and, with dct_scale, at the smallest of 1/8, 1/4, 1/2 that keeps the
// window at least the output size — so a 1000-pixel crop to 224 is decoded at 1/4 and never exists
// at full size. The result equals a full decode at that scale followed by the same crop.
//
// Threading: one scratch per worker (decoder, pixel buffer, resampler), sized by the largest image
// seen; steady state allocates nothing.
#pragma once

#include <memory>

#include "pipeline/preset.h"
#include "pipeline/sample_mapper.h"

namespace fastnn::pipeline {

std::shared_ptr<SampleMapper> make_preprocessor(const PreprocessConfig& config);

}  // namespace fastnn::pipeline
