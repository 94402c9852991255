// Overflow-checked integer arithmetic for counts that come from files or flags (record counts,
// batches, steps, epochs): a product or sum that does not fit is an error naming what was computed,
// never a wrapped (negative or tiny) number. Throws fastnn::Error; `what` names the quantity, e.g.
//   int64_t steps = checked_mul(batches_per_epoch, epochs, "batches per epoch × epochs");
#pragma once

#include <cstdint>
#include <string_view>

#include "core/check.h"

namespace fastnn {

template <typename T>
T checked_mul(T a, T b, std::string_view what) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) throw Error(str(what, ": ", a, " × ", b, " overflows a 64-bit count"));
  return r;
}

template <typename T>
T checked_add(T a, T b, std::string_view what) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) throw Error(str(what, ": ", a, " + ", b, " overflows a 64-bit count"));
  return r;
}

// v as an int64_t, or an Error naming `what` when it does not fit.
inline int64_t checked_int64(uint64_t v, std::string_view what) {
  if (v > static_cast<uint64_t>(INT64_MAX)) throw Error(str(what, ": ", v, " does not fit a signed 64-bit count"));
  return static_cast<int64_t>(v);
}

}  // namespace fastnn
