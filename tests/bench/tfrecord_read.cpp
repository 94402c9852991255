// TFRecord read + CRC verify from the page cache, one core, beside the ceilings measured in the
// same run: plain read() of the same file into a 1 MiB buffer, and read() + CRC32C of every byte.
//   bench_tfrecord_read --benchmark_format=json
// Writes a ~256 MB file of 1 KB..100 KB records to /tmp once per run (FASTNN_BENCH_TFRECORD_MB
// changes the size), reads it once to warm the page cache, and deletes it at exit.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/check.h"
#include "core/crc32c.h"
#include "core/tfrecord.h"

namespace {

std::string g_path;
uint64_t g_file_bytes = 0;
uint64_t g_records = 0;

void generate(const std::string& path, uint64_t target_bytes) {
  fastnn::TFRecordWriter w(path);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  auto next = [&s] {  // splitmix64: fast, and random data keeps the CRC honest
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::string rec;
  while (w.bytes_written() < target_bytes) {
    const size_t n = 1000 + next() % 99001;  // 1 KB .. 100 KB
    rec.resize((n + 7) & ~size_t{7});
    for (size_t i = 0; i < rec.size(); i += 8) {
      const uint64_t v = next();
      std::memcpy(rec.data() + i, &v, 8);
    }
    rec.resize(n);
    w.write(rec);
  }
  g_records = w.records_written();
  g_file_bytes = w.bytes_written();
  w.close();
}

void read_all(bool verify, size_t buffer = size_t{1} << 20) {
  fastnn::TFRecordReaderOptions o;
  o.verify_data_crc = verify;
  o.read_buffer_bytes = buffer;
  fastnn::TFRecordReader r(g_path, o);
  std::string_view v;
  uint64_t n = 0;
  while (r.next(&v)) ++n;
  if (n != g_records) throw fastnn::Error("record count mismatch");
}

// Argument: read_buffer_bytes (the default is 1 MiB).
void BM_tfrecord_read_verify(benchmark::State& state) {
  for (auto _ : state) read_all(true, static_cast<size_t>(state.range(0)));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_file_bytes));
  state.counters["records"] = static_cast<double>(g_records);
  state.SetLabel(fastnn::crc32c_implementation());
}

void BM_tfrecord_read_noverify(benchmark::State& state) {
  for (auto _ : state) read_all(false);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_file_bytes));
}

// Ceiling: read() the same file into a 1 MiB buffer (the reader's default chunk), optionally with
// CRC32C over every byte (the least any verifying reader must do). The buffer is page-aligned, as
// the reader's is: a destination a few bytes past a page boundary makes the kernel's copy several
// times slower on some CPUs (see tfrecord_reader.cpp).
void read_raw(bool crc) {
  const int fd = ::open(g_path.c_str(), O_RDONLY);
  if (fd < 0) fastnn::throw_io_error(g_path, "open");
  static char* buf = static_cast<char*>(std::aligned_alloc(4096, 1 << 20));
  uint32_t c = 0;
  ssize_t n;
  while ((n = ::read(fd, buf, 1 << 20)) > 0)
    if (crc) c = fastnn::crc32c_extend(c, buf, static_cast<size_t>(n));
  ::close(fd);
  benchmark::DoNotOptimize(c);
}

void BM_ceiling_read(benchmark::State& state) {
  for (auto _ : state) read_raw(false);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_file_bytes));
}

void BM_ceiling_read_crc32c(benchmark::State& state) {
  for (auto _ : state) read_raw(true);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_file_bytes));
}

BENCHMARK(BM_tfrecord_read_verify)->Arg(256 << 10)->Arg(1 << 20)->Arg(4 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_tfrecord_read_noverify)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ceiling_read)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ceiling_read_crc32c)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const char* mb = std::getenv("FASTNN_BENCH_TFRECORD_MB");
  const uint64_t target = (mb ? std::strtoull(mb, nullptr, 10) : 256) << 20;
  g_path = "/tmp/fastnn_bench_tfrecord_read." + std::to_string(::getpid()) + ".tfrecord";
  int rc = 0;
  try {
    generate(g_path, target);
    read_raw(false);  // into the page cache
    benchmark::AddCustomContext("file_bytes", std::to_string(g_file_bytes));
    benchmark::AddCustomContext("records", std::to_string(g_records));
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tfrecord_read: %s\n", e.what());
    rc = 1;
  }
  ::unlink(g_path.c_str());
  benchmark::Shutdown();
  return rc;
}
