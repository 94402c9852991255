// The shard planner: which source samples go into which shard, in which order.
//
// Input: the labels of one split's samples (sample i has labels[i]); output: per shard, the sample
// indices in write order. The plan is a pure function of (labels, options), so the writer can run
// shards in any order on any number of threads and still produce the same bytes.
//
// How (docs/FORMATS.md, "Shuffling and balance"):
//  1. A global permutation: samples shuffled with the split's seed stream. With `stratify`, each class
//     is shuffled on its own and the classes are laid end to end in a shuffled class order.
//  2. Dealing: position p of that sequence goes to shard p mod S. Shard sizes then differ by at most
//     one, and with `stratify` so does every class's count (a class is a contiguous run, dealt round
//     robin).
//  3. equal_shards (train): the r = n mod S shards with one extra sample either lose one (kDrop: a
//     random sample of a class the shard holds one above that class's floor, so stratification
//     survives) or the other S - r shards gain one (kPad: a random sample of a class at its floor in
//     that shard). Dropped and padded samples are reported.
//  4. Every shard is shuffled on its own, so that dealt class runs and pads land at random positions.
// Errors: ConfigError when a train split would end up with empty shards (fewer samples than shards
// with kDrop) or a split is empty; labels must be in [0, num_classes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fastnn::converters {

enum class Remainder { kDrop, kPad };
Remainder parse_remainder(const std::string& name);  // "drop" / "pad", else ConfigError
const char* remainder_name(Remainder r);

struct PlanOptions {
  std::string split;        // names the seed stream and error messages
  int64_t num_shards = 1;
  bool equal_shards = false;  // train: every shard exactly the same count
  Remainder remainder = Remainder::kDrop;
  bool stratify = false;
  uint64_t seed = 0;
  int64_t num_classes = 1;
};

struct ShardPlan {
  std::vector<std::vector<uint32_t>> shards;  // per shard: sample indices in write order
  std::vector<uint32_t> dropped;              // sample indices left out (ascending)
  struct Pad {
    uint32_t shard;
    uint32_t sample;
  };
  std::vector<Pad> padded;                    // extra copies, by shard
  uint64_t total_records() const;
};

ShardPlan plan_shards(std::span<const int32_t> labels, const PlanOptions& options);

// Holds out `count` samples (a validation split) with the seed stream "holdout": returns a mask,
// true = held out. With `stratify`, each class gives count × n_c / n samples (largest remainders
// first, ties to the lower label), so the hold-out has the source's class proportions.
std::vector<bool> choose_holdout(std::span<const int32_t> labels, int64_t num_classes, uint64_t count,
                                 bool stratify, uint64_t seed);

}  // namespace fastnn::converters
