#include "converters/planner.h"

#include <algorithm>
#include <numeric>

#include "converters/random.h"
#include "core/check.h"

namespace fastnn::converters {
namespace {

// Samples grouped by dealing class (the label with stratify, else everything in class 0), each group
// in ascending sample order: the starting point the seeded shuffles work from.
struct Buckets {
  std::vector<uint32_t> start;    // num_groups + 1 offsets into items
  std::vector<uint32_t> items;
  uint32_t size(int64_t g) const { return start[g + 1] - start[g]; }
  std::span<uint32_t> group(int64_t g) { return {items.data() + start[g], size(g)}; }
};

Buckets bucket(std::span<const int32_t> labels, int64_t groups, bool by_label) {
  Buckets b;
  b.start.assign(groups + 1, 0);
  for (int32_t l : labels) ++b.start[(by_label ? l : 0) + 1];
  for (int64_t g = 0; g < groups; ++g) b.start[g + 1] += b.start[g];
  b.items.resize(labels.size());
  std::vector<uint32_t> fill(b.start.begin(), b.start.end() - 1);
  for (size_t i = 0; i < labels.size(); ++i) b.items[fill[by_label ? labels[i] : 0]++] = static_cast<uint32_t>(i);
  return b;
}

void check_labels(std::span<const int32_t> labels, int64_t num_classes, const std::string& split) {
  FASTNN_CHECK(num_classes >= 1, "num_classes must be positive");
  for (size_t i = 0; i < labels.size(); ++i)
    FASTNN_CHECK(labels[i] >= 0 && labels[i] < num_classes, "split ", split, ": sample ", i, " has label ",
                 labels[i], " outside 0..", num_classes - 1);
}

}  // namespace

Remainder parse_remainder(const std::string& name) {
  if (name == "drop") return Remainder::kDrop;
  if (name == "pad") return Remainder::kPad;
  throw ConfigError(str("--remainder must be drop or pad, not \"", name, "\""));
}

const char* remainder_name(Remainder r) { return r == Remainder::kDrop ? "drop" : "pad"; }

uint64_t ShardPlan::total_records() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.size();
  return n;
}

ShardPlan plan_shards(std::span<const int32_t> labels, const PlanOptions& o) {
  const uint64_t n = labels.size();
  const uint64_t S = static_cast<uint64_t>(o.num_shards);
  FASTNN_CHECK(o.num_shards >= 1, "num_shards must be positive");
  if (n == 0) throw ConfigError(str("split ", o.split, " has no samples"));
  if (n >= UINT32_MAX) throw ConfigError(str("split ", o.split, " has ", n, " samples; at most 2^32 - 2 are supported"));
  check_labels(labels, o.num_classes, o.split);
  const uint64_t per = n / S, r = n % S;
  if (o.equal_shards && o.remainder == Remainder::kDrop && per == 0)
    throw ConfigError(str("split ", o.split, " has ", n, " samples, fewer than its ", S,
                          " shards: with --remainder drop every shard would be empty; use fewer GPUs or shards per GPU, "
                          "or --remainder pad"));

  const int64_t groups = o.stratify ? o.num_classes : 1;
  auto group_of = [&](uint32_t i) -> int64_t { return o.stratify ? labels[i] : 0; };
  Rng rng(o.seed, "split:" + o.split);

  // 1. Global permutation (class runs in a shuffled class order when stratified).
  Buckets b = bucket(labels, groups, o.stratify);
  for (int64_t g = 0; g < groups; ++g) rng.shuffle(b.group(g));
  std::vector<uint32_t> order(groups);
  std::iota(order.begin(), order.end(), 0u);
  rng.shuffle(std::span<uint32_t>(order));

  // 2. Deal round robin.
  ShardPlan plan;
  plan.shards.resize(S);
  for (auto& s : plan.shards) s.reserve(per + 1);
  uint64_t p = 0;
  for (uint32_t g : order)
    for (uint32_t i : b.group(g)) plan.shards[p++ % S].push_back(i);

  // 3. Equalise train shards.
  if (o.equal_shards && r != 0) {
    std::vector<uint32_t> count(groups, 0);
    auto floor_of = [&](int64_t g) { return b.size(g) / S; };
    if (o.remainder == Remainder::kDrop) {
      for (uint64_t k = 0; k < r; ++k) {
        std::vector<uint32_t>& shard = plan.shards[k];
        for (uint32_t i : shard) ++count[group_of(i)];
        std::vector<uint32_t> eligible;  // positions in the shard whose class is above its floor
        for (uint32_t pos = 0; pos < shard.size(); ++pos)
          if (count[group_of(shard[pos])] > floor_of(group_of(shard[pos]))) eligible.push_back(pos);
        for (uint32_t i : shard) count[group_of(i)] = 0;
        FASTNN_CHECK(!eligible.empty(), "planner: no sample to drop from shard ", k);
        uint32_t pos = eligible[rng.below(eligible.size())];
        plan.dropped.push_back(shard[pos]);
        shard.erase(shard.begin() + pos);
      }
      std::sort(plan.dropped.begin(), plan.dropped.end());
    } else {
      for (uint64_t k = r; k < S; ++k) {
        std::vector<uint32_t>& shard = plan.shards[k];
        for (uint32_t i : shard) ++count[group_of(i)];
        uint64_t pool = 0;  // samples of the classes this shard holds at their floor
        for (int64_t g = 0; g < groups; ++g)
          if (b.size(g) > 0 && count[g] == floor_of(g)) pool += b.size(g);
        FASTNN_CHECK(pool > 0, "planner: no class to pad shard ", k, " with");
        uint64_t t = rng.below(pool);
        for (int64_t g = 0; g < groups; ++g) {
          if (b.size(g) == 0 || count[g] != floor_of(g)) continue;
          if (t < b.size(g)) {
            uint32_t sample = b.group(g)[t];
            shard.push_back(sample);
            plan.padded.push_back({static_cast<uint32_t>(k), sample});
            break;
          }
          t -= b.size(g);
        }
        for (uint32_t i : shard) count[group_of(i)] = 0;
      }
    }
  }

  // 4. Shuffle inside each shard.
  for (auto& s : plan.shards) rng.shuffle(std::span<uint32_t>(s));
  return plan;
}

std::vector<bool> choose_holdout(std::span<const int32_t> labels, int64_t num_classes, uint64_t count,
                                 bool stratify, uint64_t seed) {
  const uint64_t n = labels.size();
  FASTNN_CHECK(count <= n, "hold-out of ", count, " from ", n, " samples");
  check_labels(labels, num_classes, "holdout");
  std::vector<bool> held(n, false);
  if (count == 0) return held;
  Rng rng(seed, "holdout");
  const int64_t groups = stratify ? num_classes : 1;
  Buckets b = bucket(labels, groups, stratify);
  // Largest-remainder apportionment of `count` over the groups.
  std::vector<uint64_t> quota(groups);
  std::vector<std::pair<uint64_t, int64_t>> rest;  // (remainder, group)
  uint64_t given = 0;
  for (int64_t g = 0; g < groups; ++g) {
    unsigned __int128 prod = static_cast<unsigned __int128>(count) * b.size(g);
    quota[g] = static_cast<uint64_t>(prod / n);
    given += quota[g];
    rest.push_back({static_cast<uint64_t>(prod % n), g});
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& c) { return a.first > c.first; });
  for (size_t i = 0; given < count; ++i, ++given) ++quota[rest[i].second];
  for (int64_t g = 0; g < groups; ++g) {
    std::span<uint32_t> items = b.group(g);
    rng.shuffle(items);
    for (uint64_t i = 0; i < quota[g]; ++i) held[items[i]] = true;
  }
  return held;
}

}  // namespace fastnn::converters
