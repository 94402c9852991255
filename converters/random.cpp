#include "converters/random.h"

#include "core/check.h"

namespace fastnn::converters {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t derive_seed(uint64_t seed, std::string_view stream) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : stream) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return splitmix64(splitmix64(seed) ^ h);
}

uint64_t Rng::below(uint64_t n) {
  FASTNN_CHECK(n > 0, "Rng::below(0)");
  // Lemire, "Fast Random Integer Generation in an Interval" (2019): the high word of x * n is
  // uniform in [0, n) once the low word's biased zone (below 2^64 mod n) is rejected.
  unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

}  // namespace fastnn::converters
