// CRC-32C throughput per implementation over 64 KiB (cache-resident) and 1 MiB buffers, beside the
// ceiling of a plain read of the same buffer (64-bit loads summed) and memcpy, measured in the same run.
//   bench_crc32c --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <vector>

#include "core/crc32c.h"

namespace {

using fastnn::crc32c_extend_pclmul;
using fastnn::crc32c_extend_portable;
using fastnn::crc32c_extend_sse42;
using fastnn::crc32c_extend_vpclmul;

std::vector<uint8_t> make_buffer(size_t n) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(42);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

template <uint32_t (*Fn)(uint32_t, const void*, size_t)>
void BM_crc(benchmark::State& state, bool supported) {
  if (!supported) {
    state.SkipWithError("not supported by this CPU");
    return;
  }
  const auto buf = make_buffer(static_cast<size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = Fn(crc, buf.data(), buf.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_crc32c_portable(benchmark::State& s) { BM_crc<crc32c_extend_portable>(s, true); }
void BM_crc32c_sse42(benchmark::State& s) { BM_crc<crc32c_extend_sse42>(s, fastnn::crc32c_has_sse42()); }
void BM_crc32c_pclmul(benchmark::State& s) { BM_crc<crc32c_extend_pclmul>(s, fastnn::crc32c_has_pclmul()); }
void BM_crc32c_vpclmul(benchmark::State& s) { BM_crc<crc32c_extend_vpclmul>(s, fastnn::crc32c_has_vpclmul()); }
void BM_crc32c_dispatch(benchmark::State& s) {
  BM_crc<fastnn::crc32c_extend>(s, true);
  s.SetLabel(fastnn::crc32c_implementation());
}

// Ceiling: read every byte once with 64-bit loads (four independent sums so the adds are not the limit).
void BM_ceiling_read64(benchmark::State& state) {
  const auto buf = make_buffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const uint8_t* p = buf.data();
    for (size_t i = 0; i + 32 <= buf.size(); i += 32) {
      uint64_t w[4];
      std::memcpy(w, p + i, 32);
      s0 += w[0];
      s1 += w[1];
      s2 += w[2];
      s3 += w[3];
    }
    uint64_t s = s0 ^ s1 ^ s2 ^ s3;
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

#ifdef __SSE2__
// Ceiling with 16-byte vector loads (SSE2 is baseline on x86-64), eight independent XORs.
void BM_ceiling_read128(benchmark::State& state) {
  const auto buf = make_buffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    __m128i a[8];
    for (auto& x : a) x = _mm_setzero_si128();
    const uint8_t* p = buf.data();
    for (size_t i = 0; i + 128 <= buf.size(); i += 128)
      for (int j = 0; j < 8; ++j)
        a[j] = _mm_xor_si128(a[j], _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16 * j)));
    for (int j = 1; j < 8; ++j) a[0] = _mm_xor_si128(a[0], a[j]);
    benchmark::DoNotOptimize(a[0]);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
#endif

void BM_ceiling_memcpy(benchmark::State& state) {
  const auto buf = make_buffer(static_cast<size_t>(state.range(0)));
  // Destination offset by a cache line: same page offsets for source and destination make some
  // CPUs' `rep movsb` several times slower, which would understate the ceiling.
  std::vector<uint8_t> dst_storage(buf.size() + 64);
  uint8_t* dst = dst_storage.data() + 64;
  for (auto _ : state) {
    std::memcpy(dst, buf.data(), buf.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void sizes(benchmark::internal::Benchmark* b) { b->Arg(64 << 10)->Arg(1 << 20); }

BENCHMARK(BM_crc32c_portable)->Apply(sizes);
BENCHMARK(BM_crc32c_sse42)->Apply(sizes);
BENCHMARK(BM_crc32c_pclmul)->Apply(sizes);
BENCHMARK(BM_crc32c_vpclmul)->Apply(sizes);
BENCHMARK(BM_crc32c_dispatch)->Apply(sizes);
BENCHMARK(BM_ceiling_read64)->Apply(sizes);
#ifdef __SSE2__
BENCHMARK(BM_ceiling_read128)->Apply(sizes);
#endif
BENCHMARK(BM_ceiling_memcpy)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
