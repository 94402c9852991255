#include "converters/image_survey.h"

#include <algorithm>
#include <cmath>

#include "converters/resize.h"
#include "core/check.h"

namespace fastnn::converters {

void measure_pixels(const uint8_t* p, size_t num_pixels, int channels, RecordFacts* f) {
  FASTNN_CHECK(channels >= 1 && channels <= 4, "measure_pixels: ", channels, " channels");
  f->sum.fill(0);
  f->sum_sq.fill(0);
  // Exact in 64 bits: at most 64 Mpixels (ImageLimits) × 255² per channel.
  for (size_t i = 0; i < num_pixels; ++i)
    for (int c = 0; c < channels; ++c) {
      const uint64_t v = p[i * channels + c];
      f->sum[c] += v;
      f->sum_sq[c] += v * v;
    }
  f->measured = true;
}

double ChannelStats::mean(int c) const { return pixels ? sum[c] / static_cast<double>(pixels) : NAN; }

double ChannelStats::stddev(int c) const {
  if (!pixels) return NAN;
  const double m = mean(c);
  return std::sqrt(std::max(0.0, sum_sq[c] / static_cast<double>(pixels) - m * m));
}

void ImageSurvey::add(const RecordFacts& f) {
  if (f.height > 0) {
    const auto key = std::make_tuple(f.height, f.width, f.channels);
    if (auto it = sizes.find(key); it != sizes.end()) ++it->second;
    else if (sizes.size() < kMaxSizes) sizes.emplace(key, 1);
    else ++other_sizes;
  }
  if (!f.measured) return;
  ChannelStats& s = channel_stats[static_cast<int>(f.channels)];
  s.channels = static_cast<int>(f.channels);
  ++s.images;
  s.pixels += static_cast<uint64_t>(f.height * f.width);
  for (int c = 0; c < s.channels; ++c) {
    s.sum[c] += static_cast<double>(f.sum[c]);
    s.sum_sq[c] += static_cast<double>(f.sum_sq[c]);
  }
  ++decoded;
}

void ImageSurvey::merge(const ImageSurvey& o) {
  for (const auto& [key, n] : o.sizes) {
    if (auto it = sizes.find(key); it != sizes.end()) it->second += n;
    else if (sizes.size() < kMaxSizes) sizes.emplace(key, n);
    else other_sizes += n;
  }
  other_sizes += o.other_sizes;
  for (const auto& [ch, s] : o.channel_stats) {
    ChannelStats& d = channel_stats[ch];
    d.channels = ch;
    d.images += s.images;
    d.pixels += s.pixels;
    for (int c = 0; c < 4; ++c) d.sum[c] += s.sum[c], d.sum_sq[c] += s.sum_sq[c];
  }
  decoded += o.decoded;
}

bool SampleTable::wants(int64_t label, const Key& key) const {
  if (label < 0 || label >= max_classes_ || per_class_ <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_label_.find(label);
  if (it == by_label_.end() || static_cast<int64_t>(it->second.size()) < per_class_) return true;
  return key < it->second.rbegin()->first;
}

void SampleTable::offer(int64_t label, const Key& key, const RecordFacts& f, const std::string& split,
                        const std::string& shard) {
  if (!wants(label, key) || f.encoded.empty() || f.height <= 0) return;
  Image full;
  try {
    if (f.format == "raw") {
      full.width = static_cast<int>(f.width);
      full.height = static_cast<int>(f.height);
      full.channels = static_cast<int>(f.channels);
      if (f.encoded.size() != static_cast<size_t>(f.height * f.width * f.channels)) return;
      if (full.channels != 1 && full.channels != 3 && full.channels != 4) return;
      full.pixels.assign(f.encoded.begin(), f.encoded.end());
    } else {
      full = decode_image(f.encoded);
    }
  } catch (const Error&) {
    return;
  }
  SampleImage s;
  s.label = label;
  s.split = split;
  s.shard = shard;
  s.record = std::get<2>(key);
  if (std::max(full.width, full.height) > kThumbnailSide) {
    const double k = static_cast<double>(kThumbnailSide) / std::max(full.width, full.height);
    s.thumbnail.width = std::max(1, static_cast<int>(std::lround(full.width * k)));
    s.thumbnail.height = std::max(1, static_cast<int>(std::lround(full.height * k)));
    s.thumbnail.channels = full.channels;
    s.thumbnail.pixels.resize(static_cast<size_t>(s.thumbnail.width) * s.thumbnail.height * full.channels);
    std::vector<float> scratch;
    resize_area(full.pixels.data(), full.width, full.height, full.channels, s.thumbnail.pixels.data(),
                s.thumbnail.width, s.thumbnail.height, &scratch);
  } else {
    s.thumbnail = std::move(full);
  }
  keep(label, key, std::move(s));
}

void SampleTable::keep(int64_t label, const Key& key, SampleImage s) {
  if (label < 0 || label >= max_classes_ || per_class_ <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::map<Key, SampleImage>& kept = by_label_[label];
  if (static_cast<int64_t>(kept.size()) >= per_class_) {
    if (!(key < kept.rbegin()->first)) return;  // another thread filled the class first
    kept.erase(std::prev(kept.end()));
  }
  kept.emplace(key, std::move(s));
}

std::vector<SampleTable::Kept> SampleTable::take_keyed() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Kept> out;
  for (auto& [label, kept] : by_label_)
    for (auto& [key, s] : kept) out.push_back({label, key, std::move(s)});
  by_label_.clear();
  return out;
}

std::map<int64_t, std::vector<SampleImage>> SampleTable::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int64_t, std::vector<SampleImage>> out;
  for (auto& [label, kept] : by_label_)
    for (auto& [key, s] : kept) out[label].push_back(std::move(s));
  by_label_.clear();
  return out;
}

}  // namespace fastnn::converters
