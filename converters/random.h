// Deterministic randomness for conversions: the same seed gives the same shards on every platform,
// compiler and standard library.
//
// std::mt19937_64's output sequence is fixed by the C++ standard, but std::shuffle and
// std::uniform_int_distribution are implementation-defined, so the bounded draw (Lemire's
// multiply-shift with rejection, unbiased) and the Fisher-Yates shuffle are written here.
// Independent streams (one per split, one for the hold-out, one for padding) come from mixing the
// user's seed with a stream name through SplitMix64, so changing one split's size never changes
// another split's order. Not thread-safe: one Rng per task.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <utility>

namespace fastnn::converters {

// SplitMix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
uint64_t splitmix64(uint64_t x);
// FNV-1a of a stream name, mixed with the seed: the state a stream starts from.
uint64_t derive_seed(uint64_t seed, std::string_view stream);

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  Rng(uint64_t seed, std::string_view stream) : engine_(derive_seed(seed, stream)) {}

  uint64_t next() { return engine_(); }
  // Uniform in [0, n), n > 0, without modulo bias.
  uint64_t below(uint64_t n);

  // Fisher-Yates, from the last element down: element i swaps with one drawn from [0, i].
  template <typename T>
  void shuffle(std::span<T> v) {
    for (size_t i = v.size(); i > 1; --i) {
      size_t j = static_cast<size_t>(below(i));
      if (j != i - 1) std::swap(v[i - 1], v[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace fastnn::converters
