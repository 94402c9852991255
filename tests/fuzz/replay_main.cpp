// Driver for fuzz targets in builds without libFuzzer: feeds every file of the seed directory given
// as argv[1], then a fixed number of deterministic mutations of each (byte flips, truncations,
// insertions, overwrites with extreme values), to LLVMFuzzerTestOneInput. Exits 0 when none crashed.
// FASTNN_REPLAY_MUTATIONS (default 2000 per seed) and FASTNN_REPLAY_SEED (default 12345) make longer or
// other runs by hand, for targets without a libFuzzer build (the trainer's parsers).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> mutate(std::vector<uint8_t> v, std::mt19937_64& rng) {
  if (v.empty()) return {static_cast<uint8_t>(rng())};
  std::uniform_int_distribution<size_t> pos(0, v.size() - 1);
  switch (rng() % 5) {
    case 0: v[pos(rng)] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
    case 1: v.resize(pos(rng)); break;
    case 2: v.insert(v.begin() + pos(rng), static_cast<uint8_t>(rng())); break;
    case 3: {  // extreme values where lengths and dimensions usually live
      size_t p = pos(rng);
      uint8_t fill = (rng() & 1) ? 0xff : 0x7f;
      for (size_t i = p; i < v.size() && i < p + 8; ++i) v[i] = fill;
      break;
    }
    default: v[pos(rng)] = static_cast<uint8_t>(rng()); break;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::vector<uint8_t>> seeds;
  if (argc > 1 && std::filesystem::is_directory(argv[1])) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(argv[1])) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) seeds.push_back(read_file(f));
  }
  seeds.push_back({});
  const char* n_env = std::getenv("FASTNN_REPLAY_MUTATIONS");
  const char* seed_env = std::getenv("FASTNN_REPLAY_SEED");
  const long mutations = n_env ? std::strtol(n_env, nullptr, 10) : 2000;
  std::mt19937_64 rng(seed_env ? std::strtoull(seed_env, nullptr, 10) : 12345);
  size_t runs = 0;
  for (const auto& seed : seeds) {
    LLVMFuzzerTestOneInput(seed.data(), seed.size());
    ++runs;
    std::vector<uint8_t> cur = seed;
    for (long i = 0; i < mutations; ++i) {
      cur = (i % 16 == 0) ? seed : mutate(cur, rng);
      LLVMFuzzerTestOneInput(cur.data(), cur.size());
      ++runs;
    }
  }
  std::printf("replayed %zu inputs from %zu seeds\n", runs, seeds.size());
  return 0;
}
