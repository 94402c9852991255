// Random erasing (Zhong et al., 2017) as timm's RandomErasing does it: with probability `prob`, one
// rectangle of the finished training image (after crop, resize, mirror and normalisation) is replaced
// by mean-centred values, so that the network cannot rely on any one part of an object.
//
// The rectangle (timm, 10 tries): area U(min_area, max_area) of the image, aspect h/w log-U(min_aspect,
// 1/min_aspect), h = round(sqrt(area × aspect)), w = round(sqrt(area / aspect)); it must be smaller than
// the image on both sides, top and left uniform over the positions that fit; no try fits: no erasing.
// Values, in normalised units (the preset's mean and std): kConst 0 (torchvision's default value), kRand
// one N(0, 1) per channel, kPixel one N(0, 1) per element (timm's default). A uint8 batch, normalised
// later on the device, gets the pixel value that normalises to them (rounded, clamped to 0..255).
//
// Every draw comes from the sample's own counter-based stream (rng.h, RngStream::kErase): the same
// (seed, epoch, index) erases the same rectangle with the same values on any thread, and turning erasing
// on changes no crop, mirror or colour draw.
#pragma once

#include <cstdint>
#include <string_view>

#include "pipeline/resample.h"

namespace fastnn::pipeline {

enum class EraseMode { kConst, kRand, kPixel };
EraseMode parse_erase_mode(std::string_view name);  // "const", "rand", "pixel"; ConfigError otherwise
const char* erase_mode_name(EraseMode mode);

struct EraseOptions {
  float prob = 0;  // 0: off
  EraseMode mode = EraseMode::kPixel;
  float min_area = 0.02f, max_area = 1.0f / 3.0f;
  float min_aspect = 0.3f;  // the largest is its inverse
  int attempts = 10;
};

struct EraseRect {
  bool erased = false;
  int top = 0, left = 0, height = 0, width = 0;
};

// Erases (or not) sample `index` of `epoch` in `slot`, one sample of format.spec; returns what it did.
EraseRect erase_sample(const EraseOptions& options, const OutputFormat& format, uint64_t seed, int64_t epoch,
                       uint64_t index, void* slot);

}  // namespace fastnn::pipeline
