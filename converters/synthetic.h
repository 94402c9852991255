// Synthetic data (FastNN's "mock" data): generated images and labels for benchmarks and tests.
//
// Sample i of a split has label i mod num_classes and an image that is a pure function of (split, i):
// a class-coloured gradient plus deterministic noise, so a model can learn it and every run makes the
// same bytes. Nothing is read from disk. Records: PNG, JPEG or raw HWC bytes (image/format "raw").
#pragma once

#include <memory>
#include <string>

#include "converters/source.h"

namespace fastnn::converters {

struct SyntheticOptions {
  uint64_t num_records = 1000;      // split "train"
  uint64_t num_test_records = 0;    // split "test" when > 0
  int height = 224, width = 224, channels = 3;
  int num_classes = 1000;
  std::string image_format = "jpeg";  // "jpeg", "png", "raw"
  int jpeg_quality = 90;
  std::vector<std::string> class_names;
};

class SyntheticSource : public Source {
 public:
  explicit SyntheticSource(SyntheticOptions options);
  DatasetIndex scan(const ScanOptions& options) override;
  std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const override;

 private:
  SyntheticOptions options_;
};

// The pixels of sample `id` of split number `split` (HWC, height × width × channels bytes).
void synthetic_pixels(uint32_t split, uint64_t id, int32_t label, int height, int width, int channels, uint8_t* out);

}  // namespace fastnn::converters
