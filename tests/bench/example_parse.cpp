// tf.Example parsing of a typical image record (a 28x28 PNG-sized 300-byte image/encoded plus label,
// height, width, format, channels): ExampleParser extracting those six keys, against the peer
// libprotobuf ParseFromString into a reused tensorflow::Example (with and without reading the values
// back from its map), all in one run on one core. Items are records.
//
//   build/bin/bench_example_parse [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/example.h"
#include "schemas/example.pb.h"

namespace {

using namespace fastnn;

std::string image_record() {
  std::mt19937 rng(7);
  std::string png(300, '\0');
  for (auto& c : png) c = static_cast<char>(rng());
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, png)
      .add_bytes(keys::kImageFormat, "png")
      .add_int64(keys::kLabel, 7)
      .add_int64(keys::kHeight, 28)
      .add_int64(keys::kWidth, 28)
      .add_int64(keys::kChannels, 1);
  return b.serialize();
}

void BM_FastnnParse(benchmark::State& state) {
  const std::string rec = image_record();
  ExampleParser parser({keys::kImageEncoded, keys::kLabel, keys::kHeight, keys::kWidth, keys::kImageFormat, keys::kChannels});
  std::vector<FeatureView> out(parser.keys().size());
  for (auto _ : state) {
    parser.parse(rec, out);
    std::string_view image = out[0].single_bytes(keys::kImageEncoded);
    int64_t label = out[1].single_int64(keys::kLabel);
    int64_t h = out[2].single_int64(keys::kHeight), w = out[3].single_int64(keys::kWidth);
    std::string_view format = out[4].single_bytes(keys::kImageFormat);
    int64_t c = out[5].single_int64(keys::kChannels);
    benchmark::DoNotOptimize(image);
    benchmark::DoNotOptimize(format);
    benchmark::DoNotOptimize(label + h + w + c);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(rec.size()));
  state.counters["record_bytes"] = static_cast<double>(rec.size());
}
BENCHMARK(BM_FastnnParse);

void BM_LibprotobufParse(benchmark::State& state) {
  const std::string rec = image_record();
  tensorflow::Example ex;
  for (auto _ : state) {
    bool ok = ex.ParseFromString(rec);
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(rec.size()));
}
BENCHMARK(BM_LibprotobufParse);

void BM_LibprotobufParseAndRead(benchmark::State& state) {
  const std::string rec = image_record();
  tensorflow::Example ex;
  for (auto _ : state) {
    ex.ParseFromString(rec);
    const auto& m = ex.features().feature();
    const std::string& image = m.at(keys::kImageEncoded).bytes_list().value(0);
    int64_t label = m.at(keys::kLabel).int64_list().value(0);
    int64_t h = m.at(keys::kHeight).int64_list().value(0), w = m.at(keys::kWidth).int64_list().value(0);
    const std::string& format = m.at(keys::kImageFormat).bytes_list().value(0);
    int64_t c = m.at(keys::kChannels).int64_list().value(0);
    benchmark::DoNotOptimize(image.data());
    benchmark::DoNotOptimize(format.data());
    benchmark::DoNotOptimize(label + h + w + c);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(rec.size()));
}
BENCHMARK(BM_LibprotobufParseAndRead);

// The builder, for the converters' write side.
void BM_FastnnBuild(benchmark::State& state) {
  std::string png(300, 'x');
  ExampleBuilder b;
  std::string out;
  for (auto _ : state) {
    b.clear();
    b.add_bytes(keys::kImageEncoded, png)
        .add_bytes(keys::kImageFormat, "png")
        .add_int64(keys::kLabel, 7)
        .add_int64(keys::kHeight, 28)
        .add_int64(keys::kWidth, 28)
        .add_int64(keys::kChannels, 1);
    b.serialize_to(&out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FastnnBuild);

}  // namespace

BENCHMARK_MAIN();
