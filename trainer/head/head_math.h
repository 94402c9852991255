// What the CPU head (classifier_head.cpp) and the device head (classifier_head_cuda.cu) compute alike,
// written once as FASTNN_HD functions (core/host_device.h): a row's initial weights, the logits column
// that holds a sample's label, and the top-5 candidates of a row and their merge over ranks. The host
// tests walk exactly what the kernels run (tests/unit/head/head_math_test.cpp).
//
// Top-5 order: a higher value first, equal values to the smaller class id (a strict order, since class
// ids are distinct), so the top 5 of any union of candidate lists is the same whatever the order in
// which the lists are merged: per-rank lists all-gathered and merged give the top 5 of the whole row.
// The all-gathered layout is [source][row][kTopK][2] doubles (value, class id); a slot a short list
// left empty holds -inf and is skipped when merging. A non-finite value (a NaN or an infinite logit: a
// diverged step) is never a candidate: offer() ignores it, since a NaN offered to a list that is not full
// would stay there for good (no comparison ever moves it) and displace a real class from the top 5.
// Pure functions, no allocation.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/host_device_math.h"
#include "trainer/ops/random.h"

namespace fastnn::head {

// ---- initial weights ----

// The Philox stream of the head's initialisation: apart from the graph's parameter streams.
inline constexpr uint64_t kHeadInitStream = 0x68656164;  // "head"

// Xavier's uniform bound sqrt(6 / (emb_dim + num_classes)).
FASTNN_HD inline double initial_weight_bound(int64_t emb_dim, int64_t num_classes) {
  return hd::sqrt(hd::div(6.0, static_cast<double>(emb_dim + num_classes)));
}

// Element d of class `cls`'s row, from (seed, global class id, d) only: the same at any number of ranks.
FASTNN_HD inline double initial_weight(uint64_t seed, int64_t cls, int64_t d, double bound) {
  const uint32_t word =
      ops::philox_word(seed ^ (static_cast<uint64_t>(cls) * 0x9E3779B97F4A7C15ull), kHeadInitStream, static_cast<uint64_t>(d));
  return hd::mul(hd::sub(hd::mul(2.0, static_cast<double>(ops::uniform01(word))), 1.0), bound);
}

// ---- the label's column ----

// The logits column of class `label` on a rank holding rows [row_begin, row_end): label - row_begin on
// the full path; -1 when this rank has no such column (another rank's class, or a label outside every
// range).
FASTNN_HD inline int64_t target_column(int64_t label, int64_t row_begin, int64_t row_end) {
  return label < row_begin || label >= row_end ? -1 : label - row_begin;
}

// The same on PartialFC's path, where the columns are the m sampled local rows `cols` (ascending): the
// label's index among them, or -1 (also for a row of this rank that was not sampled).
FASTNN_HD inline int64_t sampled_target_column(int64_t label, int64_t row_begin, int64_t row_end, const int64_t* cols,
                                               int64_t m) {
  const int64_t local = target_column(label, row_begin, row_end);
  if (local < 0) return -1;
  int64_t lo = 0, hi = m;  // the first sampled row >= local
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cols[mid] < local) lo = mid + 1;
    else hi = mid;
  }
  return lo < m && cols[lo] == local ? lo : -1;
}

// ---- top-5 candidates ----

inline constexpr int kTopK = 5;

// The best kTopK (value, class) pairs offered so far, best first.
struct TopCandidates {
  double value[kTopK];
  int64_t cls[kTopK];
  int found = 0;

  FASTNN_HD static bool better(double av, int64_t ac, double bv, int64_t bc) {
    return av > bv || (av == bv && ac < bc);
  }
  // Ignores a non-finite v (see the top of this file).
  FASTNN_HD void offer(double v, int64_t c) {
    if (!hd::finite(v)) return;
    int q;
    if (found < kTopK) {
      q = found++;
    } else if (better(v, c, value[kTopK - 1], cls[kTopK - 1])) {
      q = kTopK - 1;
    } else {
      return;
    }
    value[q] = v;
    cls[q] = c;
    for (; q > 0 && better(value[q], cls[q], value[q - 1], cls[q - 1]); --q) {
      const double tv = value[q];
      const int64_t tc = cls[q];
      value[q] = value[q - 1];
      cls[q] = cls[q - 1];
      value[q - 1] = tv;
      cls[q - 1] = tc;
    }
  }
  FASTNN_HD void merge(const TopCandidates& o) {
    for (int q = 0; q < o.found; ++q) offer(o.value[q], o.cls[q]);
  }
  // Writes the kTopK slots of one row in the all-gathered layout (empty slots -inf).
  FASTNN_HD void write(double* out) const {
    for (int q = 0; q < kTopK; ++q) {
      out[2 * q] = q < found ? value[q] : -HUGE_VAL;
      out[2 * q + 1] = q < found ? static_cast<double>(cls[q]) : -1.0;
    }
  }
};

struct TopHits {
  int top1 = 0, top5 = 0;
};

// Row i's candidates from `sources` lists in the all-gathered layout over `rows` rows, merged, against
// the row's label.
FASTNN_HD inline TopHits merged_hits(const double* all, int sources, int64_t rows, int64_t i, int64_t label) {
  TopCandidates merged;
  for (int q = 0; q < sources; ++q) {
    const double* slot = all + ((static_cast<int64_t>(q) * rows + i) * kTopK) * 2;
    for (int t = 0; t < kTopK; ++t)
      if (slot[2 * t] > -HUGE_VAL) merged.offer(slot[2 * t], static_cast<int64_t>(slot[2 * t + 1]));
  }
  TopHits h;
  for (int t = 0; t < merged.found; ++t)
    if (merged.cls[t] == label) {
      h.top1 = t == 0 ? 1 : 0;
      h.top5 = 1;
    }
  return h;
}

}  // namespace fastnn::head
