// Converter building blocks, each beside its ceiling measured in the same run:
//   base64 decoding (strict) vs memcpy of the same bytes;
//   one MNIST record (PNG encode + Example) vs the PNG encode alone (zlib is the ceiling);
//   shard planning for a million samples (plain, stratified);
//   a whole synthetic raw conversion (index, plan, write, manifest) vs writing the same bytes with
//   one fwrite per record.
//   bench_convert --benchmark_format=json
// End-to-end numbers against Python and `cat` come from tests/bench/convert_e2e.sh.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "converters/convert.h"
#include "converters/image_example.h"
#include "converters/planner.h"
#include "converters/synthetic.h"
#include "core/base64.h"
#include "core/example.h"
#include "core/image.h"

namespace {

using namespace fastnn;
using namespace fastnn::converters;

std::string random_bytes(size_t n) {
  std::mt19937_64 rng(1);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

void BM_base64_decode(benchmark::State& state) {
  const std::string enc = base64_encode(random_bytes(1 << 20));
  std::vector<uint8_t> out(base64_max_decoded_size(enc.size()));
  for (auto _ : state) {
    Base64Result r = base64_decode(enc, out.data(), out.size());
    benchmark::DoNotOptimize(r.size);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * enc.size()));
}
BENCHMARK(BM_base64_decode);

void BM_memcpy_ceiling(benchmark::State& state) {
  const std::string src = random_bytes(1 << 20);
  std::vector<char> out(src.size());
  for (auto _ : state) {
    std::memcpy(out.data(), src.data(), src.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * src.size()));
}
BENCHMARK(BM_memcpy_ceiling);

// 28×28 gray images with MNIST-like statistics: mostly black, a bright blob.
std::vector<uint8_t> digit(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> px(784, 0);
  for (int y = 6; y < 22; ++y)
    for (int x = 8; x < 20; ++x) px[y * 28 + x] = static_cast<uint8_t>(120 + rng() % 136);
  return px;
}

void BM_png_encode_28x28(benchmark::State& state) {
  std::vector<uint8_t> px = digit(3);
  for (auto _ : state) benchmark::DoNotOptimize(encode_png(px.data(), 28, 28, 1, 6));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_png_encode_28x28);

void BM_mnist_record(benchmark::State& state) {
  std::vector<uint8_t> px = digit(3);
  std::string rec;
  for (auto _ : state) {
    std::string png = encode_png(px.data(), 28, 28, 1, 6);
    serialize_image_example(png, "png", 28, 28, 1, 7, -1, &rec);
    benchmark::DoNotOptimize(rec.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_mnist_record);

void BM_plan_shards(benchmark::State& state) {
  std::mt19937 rng(5);
  std::vector<int32_t> labels(1 << 20);
  for (auto& l : labels) l = static_cast<int32_t>(rng() % 1000);
  PlanOptions o;
  o.split = "train";
  o.num_shards = 64;
  o.equal_shards = true;
  o.stratify = state.range(0) != 0;
  o.num_classes = 1000;
  for (auto _ : state) benchmark::DoNotOptimize(plan_shards(labels, o).shards.data());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * labels.size()));
  state.SetLabel(o.stratify ? "stratified" : "plain");
}
BENCHMARK(BM_plan_shards)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

std::string temp_dir() {
  std::string t = (std::filesystem::temp_directory_path() / "fastnn_bench_XXXXXX").string();
  return ::mkdtemp(t.data());
}

constexpr uint64_t kSyntheticRecords = 4000;

void BM_convert_synthetic_raw(benchmark::State& state) {
  SyntheticOptions so;
  so.num_records = kSyntheticRecords;
  so.height = so.width = 32;
  so.num_classes = 10;
  so.image_format = "raw";
  std::string dir = temp_dir();
  for (auto _ : state) {
    ConvertOptions o;
    o.output = dir + "/out";
    o.num_gpus = 2;
    o.shards_per_gpu = 2;
    o.quiet = true;
    o.overwrite = true;
    SyntheticSource src(so);
    run_conversion(src, o);
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSyntheticRecords));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kSyntheticRecords * 32 * 32 * 3));
}
BENCHMARK(BM_convert_synthetic_raw)->Unit(benchmark::kMillisecond);

// Ceiling: the same pixels generated and written with one fwrite each, no framing, no shuffle.
void BM_write_raw_ceiling(benchmark::State& state) {
  std::string dir = temp_dir();
  std::vector<uint8_t> px(32 * 32 * 3);
  for (auto _ : state) {
    FILE* f = std::fopen((dir + "/raw").c_str(), "wb");
    for (uint64_t i = 0; i < kSyntheticRecords; ++i) {
      synthetic_pixels(0, i, static_cast<int32_t>(i % 10), 32, 32, 3, px.data());
      std::fwrite(px.data(), 1, px.size(), f);
    }
    std::fclose(f);
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSyntheticRecords));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kSyntheticRecords * px.size()));
}
BENCHMARK(BM_write_raw_ceiling)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
