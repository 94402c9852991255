#include "converters/synthetic.h"

#include <vector>

#include "converters/image_example.h"
#include "converters/mnist.h"
#include "converters/random.h"
#include "core/check.h"
#include "core/image.h"

namespace fastnn::converters {
namespace {

class SyntheticEncoder : public SampleEncoder {
 public:
  explicit SyntheticEncoder(const SyntheticOptions* o) : o_(o) {}
  void encode(const SampleRef& s, std::string* record, RecordInfo* info) override {
    const SyntheticOptions& o = *o_;
    pixels_.resize(static_cast<size_t>(o.height) * o.width * o.channels);
    synthetic_pixels(s.file, s.offset, s.label, o.height, o.width, o.channels, pixels_.data());
    const char* format = o.image_format.c_str();
    std::string_view encoded;
    if (o.image_format == "png") {
      encoded_ = encode_png(pixels_.data(), o.width, o.height, o.channels);
      encoded = encoded_;
      format = "png";
    } else if (o.image_format == "jpeg") {
      encoded_ = encode_jpeg(pixels_.data(), o.width, o.height, o.channels, o.jpeg_quality);
      encoded = encoded_;
      format = "jpeg";
    } else {
      encoded = std::string_view(reinterpret_cast<const char*>(pixels_.data()), pixels_.size());
      format = "raw";
    }
    serialize_image_example(encoded, format, o.height, o.width, o.channels, s.label, -1, record);
    *info = {format, o.height, o.width, o.channels};
  }

 private:
  const SyntheticOptions* o_;
  std::vector<uint8_t> pixels_;
  std::string encoded_;
};

}  // namespace

void synthetic_pixels(uint32_t split, uint64_t id, int32_t label, int h, int w, int c, uint8_t* out) {
  const uint64_t colour = splitmix64(0x5eed0000ull + static_cast<uint64_t>(label));
  uint64_t state = splitmix64(splitmix64(id) ^ (uint64_t{split} << 56));
  uint64_t noise = 0;
  int left = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int ch = 0; ch < c; ++ch) {
        if (left == 0) {
          state += 0x9e3779b97f4a7c15ull;
          noise = splitmix64(state);
          left = 8;
        }
        int n = static_cast<int>(noise & 63) - 32;
        noise >>= 8;
        --left;
        int base = static_cast<int>((colour >> (8 * ch)) & 0xff);
        int grad = (ch % 2 == 0 ? x * 64 / w : y * 64 / h);
        int v = base / 2 + grad + n + 32;
        out[(static_cast<size_t>(y) * w + x) * c + ch] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  }
}

SyntheticSource::SyntheticSource(SyntheticOptions o) : options_(std::move(o)) {
  const SyntheticOptions& s = options_;
  if (s.height < 1 || s.width < 1 || s.height > 8192 || s.width > 8192)
    throw ConfigError(str("synthetic image size ", s.width, "x", s.height, " must be 1..8192 a side"));
  if (s.channels != 1 && s.channels != 3 && !(s.channels == 4 && s.image_format != "jpeg"))
    throw ConfigError(str("--channels must be 1 or 3 (4 for png and raw), not ", s.channels));
  if (s.image_format != "png" && s.image_format != "jpeg" && s.image_format != "raw")
    throw ConfigError(str("--image-format must be jpeg, png or raw, not \"", s.image_format, "\""));
  if (s.num_classes < 1 || s.num_classes > kMaxClasses) throw ConfigError("--num-classes must be positive");
  if (s.num_records < 1 || s.num_records >= UINT32_MAX || s.num_test_records >= UINT32_MAX)
    throw ConfigError("--num-records must be in 1..2^32-2");
  if (s.jpeg_quality < 1 || s.jpeg_quality > 100) throw ConfigError("--jpeg-quality must be in 1..100");
}

DatasetIndex SyntheticSource::scan(const ScanOptions&) {
  DatasetIndex index;
  index.dataset = "synthetic";
  index.class_names = default_class_names(options_.num_classes, options_.class_names);
  index.files = {"synthetic:train", "synthetic:test"};
  for (uint32_t split = 0; split < 2; ++split) {
    uint64_t n = split == 0 ? options_.num_records : options_.num_test_records;
    if (n == 0) continue;
    SplitIndex s;
    s.name = split == 0 ? "train" : "test";
    s.equal_shards = split == 0;
    s.samples.resize(n);
    const uint32_t bytes = static_cast<uint32_t>(options_.height * options_.width * options_.channels);
    for (uint64_t i = 0; i < n; ++i) {
      SampleRef& r = s.samples[i];
      r.offset = i;
      r.file = split;
      r.length = bytes;
      r.label = static_cast<int32_t>(i % options_.num_classes);
    }
    index.splits.push_back(std::move(s));
  }
  return index;
}

std::unique_ptr<SampleEncoder> SyntheticSource::make_encoder(const DatasetIndex&) const {
  return std::make_unique<SyntheticEncoder>(&options_);
}

}  // namespace fastnn::converters
