// A guard for the classic silent input bug: the same batch over and over (an iterator re-created
// every step, a cache replaying one element) or labels that never change (a label key misspelt to
// a default, a split sorted by class and not shuffled).
//
// observe() looks at each batch: a fingerprint of its labels and of 4096 evenly spaced 8-byte
// words of its data (cheap even for 150 MB batches), compared with the previous batch's; and the
// run length of identical labels. Each condition is reported once when it starts (not again until
// it has cleared). Not thread-safe: one guard per consumer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fastnn::pipeline {

class BatchGuard {
 public:
  // constant_label_run: this many consecutive identical labels (across batches) is a warning.
  explicit BatchGuard(uint64_t constant_label_run = 4096) : max_run_(constant_label_run) {}

  // Returns the warnings this batch raises (usually none).
  std::vector<std::string> observe(const void* data, size_t bytes, const int32_t* labels, int n);

 private:
  uint64_t max_run_;
  bool have_prev_ = false;
  uint64_t prev_fingerprint_ = 0;
  bool repeat_reported_ = false;
  int32_t run_label_ = 0;
  uint64_t run_length_ = 0;
  bool run_reported_ = false;
  uint64_t batches_ = 0;
};

}  // namespace fastnn::pipeline
