#include "pipeline/guard.h"

#include <cstring>

#include "core/check.h"

namespace fastnn::pipeline {
namespace {

constexpr size_t kSampledWords = 4096;

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

uint64_t fingerprint(const void* data, size_t bytes, const int32_t* labels, int n) {
  uint64_t h = mix(0, static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) h = mix(h, static_cast<uint32_t>(labels[i]));
  const auto* p = static_cast<const unsigned char*>(data);
  size_t words = bytes / 8;
  if (words <= kSampledWords) {
    for (size_t i = 0; i < words; ++i) {
      uint64_t v;
      std::memcpy(&v, p + i * 8, 8);
      h = mix(h, v);
    }
  } else {
    for (size_t k = 0; k < kSampledWords; ++k) {
      uint64_t v;
      std::memcpy(&v, p + (k * words / kSampledWords) * 8, 8);
      h = mix(h, v);
    }
  }
  return h;
}

}  // namespace

std::vector<std::string> BatchGuard::observe(const void* data, size_t bytes, const int32_t* labels, int n) {
  std::vector<std::string> warnings;
  uint64_t f = fingerprint(data, bytes, labels, n);
  if (have_prev_ && f == prev_fingerprint_) {
    if (!repeat_reported_)
      warnings.push_back(str("input guard: batch ", batches_, " is identical to the previous batch (same labels ",
                             "and pixels); is the iterator re-created every step, or a cache replaying one element?"));
    repeat_reported_ = true;
  } else {
    repeat_reported_ = false;
  }
  have_prev_ = true;
  prev_fingerprint_ = f;

  for (int i = 0; i < n; ++i) {
    if (run_length_ > 0 && labels[i] == run_label_) {
      ++run_length_;
    } else {
      run_label_ = labels[i];
      run_length_ = 1;
      run_reported_ = false;
    }
  }
  if (run_length_ >= max_run_ && !run_reported_) {
    warnings.push_back(str("input guard: the last ", run_length_, " labels are all ", run_label_,
                           "; is the label key right, and is the data shuffled?"));
    run_reported_ = true;
  }
  ++batches_;
  return warnings;
}

}  // namespace fastnn::pipeline
