// Classes, not shards: how a split's records spread over the class map, for `fastnn check`.
//
// The balance test of shard_check.h compares each shard with its split, so a split that is shuffled
// passes it whatever its classes look like: 94 photos of one class and 2 of another, or a validation
// split with no record of some class, were "OK". This looks at the split itself: records per class,
// the classes without a record, and the ratio of the largest class to the smallest present one, and
// words a warning (with the numbers and the names) when the ratio is above a threshold or a class is
// missing. Warnings, not errors: an imbalanced dataset may be what the user has, but it must be said.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fastnn::converters {

inline constexpr double kDefaultMaxClassRatio = 10;

struct ClassBalance {
  std::vector<uint64_t> counts;  // records per class
  std::vector<int64_t> missing;  // classes without a record, ascending
  int64_t largest = -1, smallest = -1;  // the classes with most / fewest records among those present (lowest id on ties)
  double ratio = 0;  // counts[largest] / counts[smallest]; 0 when no class has a record
  uint64_t total = 0;
};

ClassBalance class_balance(const std::vector<uint64_t>& histogram);

// The warnings for one split (none when the ratio is at most max_ratio and no class is missing).
// `names` index = class; a class beyond it is shown by number.
std::vector<std::string> class_balance_warnings(const std::string& split, const ClassBalance& b,
                                                const std::vector<std::string>& names, double max_ratio);

}  // namespace fastnn::converters
