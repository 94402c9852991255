// PartialFC's class sampler: which class rows a rank uses at one training step.
//
// A step uses every positive class (the labels of the global batch) and each other class c
// independently with probability `ratio`, decided by a counter-based draw:
//
//   c is sampled  ⇔  philox_word(seed ^ kPartialFcKeyTag, step, c) < dropout_threshold(ratio)
//
// (ops/random.h: Philox4x32-10 keyed by the job seed, the step as the stream, the global class id as the
// counter; the integer threshold round(ratio·2^32) makes ratio = 1 keep every class.) The decision for a
// class depends on (seed, step, c) only, never on which rank holds c, so the union over ranks of any
// split of [0, K) into ranges is the same set for any number of ranks: a run resumed at another world
// size samples the same classes. The key tag keeps these draws independent of dropout's and
// initialisation's, which use the bare seed.
//
// Unlike PLSC's class_center_sample (exactly int(ratio·rows) per rank, positives first, then a
// rank-local random fill), the count per step is random: P + Binomial(rows − P, ratio).
// Pure function; thread-safe; allocates only its result.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fastnn::head {

// "PARTIALF": XORed into the seed so the sampler's stream differs from every other user of the seed.
inline constexpr uint64_t kPartialFcKeyTag = 0x5041525449414C46ull;

// The sorted, distinct class ids in [begin, end) used at `step`: each label of `positives` that lies in
// range (others are ignored; duplicates allowed), plus each other class whose draw falls below `ratio`.
// ratio must be in (0, 1] (ConfigError naming --sample_ratio otherwise) and acts rounded to a multiple of
// 2^-32; ratio == 1 returns all of [begin, end). Requires 0 <= begin <= end.
std::vector<int64_t> sample_classes(uint64_t seed, uint64_t step, int64_t begin, int64_t end, double ratio,
                                    std::span<const int64_t> positives);

// sample_classes' classes of a rank holding [begin, end) as local row indices (class - begin), ascending:
// the rows of that rank a step uses (both heads gather and update these).
std::vector<int64_t> sample_local_rows(uint64_t seed, uint64_t step, int64_t begin, int64_t end, double ratio,
                                       std::span<const int64_t> positives);

// The draw alone (without positives), for tests and for a kernel that wants to recompute it.
bool class_sampled(uint64_t seed, uint64_t step, int64_t class_id, double ratio);

}  // namespace fastnn::head
