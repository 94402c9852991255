#include "trainer/head/partial_fc.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/check.h"
#include "trainer/ops/random.h"

namespace fastnn::head {
namespace {

void check_ratio(double ratio) {
  if (!(ratio > 0 && ratio <= 1)) throw ConfigError(str("--sample_ratio=", ratio, " must be in (0, 1]"));
}

}  // namespace

bool class_sampled(uint64_t seed, uint64_t step, int64_t class_id, double ratio) {
  check_ratio(ratio);
  FASTNN_CHECK(class_id >= 0, "class id ", class_id, " is negative");
  return ops::philox_word(seed ^ kPartialFcKeyTag, step, static_cast<uint64_t>(class_id)) <
         ops::dropout_threshold(ratio);
}

std::vector<int64_t> sample_classes(uint64_t seed, uint64_t step, int64_t begin, int64_t end, double ratio,
                                    std::span<const int64_t> positives) {
  check_ratio(ratio);
  FASTNN_CHECK(0 <= begin && begin <= end, "class range [", begin, ", ", end, ") is invalid");
  std::vector<int64_t> out;
  if (ratio == 1.0) {
    out.resize(static_cast<size_t>(end - begin));
    for (size_t i = 0; i < out.size(); ++i) out[i] = begin + static_cast<int64_t>(i);
    return out;
  }
  std::vector<int64_t> pos;
  for (int64_t c : positives)
    if (c >= begin && c < end) pos.push_back(c);
  std::sort(pos.begin(), pos.end());
  pos.erase(std::unique(pos.begin(), pos.end()), pos.end());

  const double n = static_cast<double>(end - begin);
  out.reserve(pos.size() + static_cast<size_t>(n * ratio + 6 * std::sqrt(n * ratio) + 16));
  const uint64_t key = seed ^ kPartialFcKeyTag;
  const uint64_t threshold = ops::dropout_threshold(ratio);
  const auto ukey = std::array<uint32_t, 2>{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  auto next_pos = pos.begin();
  // One Philox block gives the words of 4 consecutive classes (philox_word's layout: block c/4, lane c%4).
  for (int64_t c = begin; c < end;) {
    const uint64_t block = static_cast<uint64_t>(c) >> 2;
    const auto words = ops::philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                           static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)},
                                          ukey);
    const int64_t block_end = std::min(end, static_cast<int64_t>((block + 1) << 2));
    for (; c < block_end; ++c) {
      const bool positive = next_pos != pos.end() && *next_pos == c;
      if (positive) ++next_pos;
      if (positive || words[static_cast<size_t>(c) & 3] < threshold) out.push_back(c);
    }
  }
  return out;
}

std::vector<int64_t> sample_local_rows(uint64_t seed, uint64_t step, int64_t begin, int64_t end, double ratio,
                                       std::span<const int64_t> positives) {
  std::vector<int64_t> rows = sample_classes(seed, step, begin, end, ratio, positives);
  for (int64_t& c : rows) c -= begin;
  return rows;
}

}  // namespace fastnn::head
