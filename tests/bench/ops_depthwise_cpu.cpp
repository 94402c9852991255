// CPU depthwise_conv2d (3x3, SAME, batch 8) on MobileNet's layer shapes, each pass next to two ceilings
// measured in the same run:
//   - the memory roofline: a streaming pass over the bytes the pass must touch at least once (forward:
//     read x, write y; backward data: read dy, write dx; backward filter: read x and dy), as y = a*x
//     on oneTBB over all cores. A 3x3 depthwise layer does 9 multiply-adds per output, ~2.25 FLOP per
//     byte of that traffic, far below this CPU's ~8-16 FLOP/byte balance: it is bandwidth (or cache)
//     bound, so this is the ceiling it can approach;
//   - the dense-GEMM ceiling: one cblas_sgemm (OpenBLAS, all cores) of the same FLOPs (a cube), what the
//     arithmetic would take at GEMM efficiency; depthwise cannot reach it (no data reuse across channels).
// Shapes (N, C, H, W): 8x32x112x112 (v1 Conv2d_1), 8x128x56x56 (Conv2d_3), 8x512x14x14 (Conv2d_7..11),
// 8x1024x7x7 (Conv2d_13); stride 1.
//
//   bench_ops_depthwise_cpu --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include <tbb/parallel_for.h>

#include "trainer/ops/depthwise_conv2d.h"

namespace fastnn::ops {
namespace {

struct DwShape {
  int64_t n, c, hw;
};
constexpr DwShape k112{8, 32, 112}, k56{8, 128, 56}, k14{8, 512, 14}, k7{8, 1024, 7};

enum Pass { kForward = 0, kBackwardData = 1, kBackwardFilter = 2, kStep = 3 };

DepthwiseConv2dParams make_params(const DwShape& s) {
  const std::vector<TensorSpec> x{{.name = "x", .shape = {s.n, s.c, s.hw, s.hw}, .dtype = DType::kF32}};
  return depthwise_conv2d_params({{"kernel", 3}, {"padding", "same"}, {"bias", false}}, x);
}

std::vector<float> random_vec(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = u(rng);
  return v;
}

double pass_flops(const DepthwiseConv2dParams& p, Pass pass) {
  const double f = 2.0 * static_cast<double>(p.n * p.k() * p.win.p * p.win.q * p.win.r * p.win.s);
  return pass == kStep ? 3 * f : f;
}

// Bytes read + written at least once by the pass (float32).
double pass_bytes(const DepthwiseConv2dParams& p, Pass pass) {
  const double x = 4.0 * static_cast<double>(p.n * p.c * p.h * p.w), y = 4.0 * static_cast<double>(p.n * p.k() * p.win.p * p.win.q);
  if (pass == kStep) return 3 * (x + y);
  return x + y;
}

void BM_Depthwise(benchmark::State& st, DwShape s, Pass pass) {
  const DepthwiseConv2dParams p = make_params(s);
  auto x = random_vec(p.n * p.c * p.h * p.w, 1), w = random_vec(p.weight_numel(), 2);
  auto dy = random_vec(p.n * p.k() * p.win.p * p.win.q, 3);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
  for (auto _ : st) {
    const bool step = pass == kStep;
    if (pass == kForward || step) cpu::depthwise_conv2d_forward<float>(p, x.data(), w.data(), nullptr, y.data());
    if (pass == kBackwardData || step) cpu::depthwise_conv2d_backward_data<float>(p, w.data(), dy.data(), dx.data());
    if (pass == kBackwardFilter || step)
      cpu::depthwise_conv2d_backward_filter<float>(p, x.data(), dy.data(), dw.data(), nullptr);
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(pass_flops(p, pass) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GB/s"] = benchmark::Counter(pass_bytes(p, pass) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The plain bounds-checked loops (the fast path's test oracle), for the before/after comparison.
void BM_DepthwiseReference(benchmark::State& st, DwShape s, Pass pass) {
  const DepthwiseConv2dParams p = make_params(s);
  auto x = random_vec(p.n * p.c * p.h * p.w, 1), w = random_vec(p.weight_numel(), 2);
  auto dy = random_vec(p.n * p.k() * p.win.p * p.win.q, 3);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
  for (auto _ : st) {
    const bool step = pass == kStep;
    if (pass == kForward || step) cpu::depthwise_conv2d_forward_reference<float>(p, x.data(), w.data(), nullptr, y.data());
    if (pass == kBackwardData || step)
      cpu::depthwise_conv2d_backward_data_reference<float>(p, w.data(), dy.data(), dx.data());
    if (pass == kBackwardFilter || step)
      cpu::depthwise_conv2d_backward_filter_reference<float>(p, x.data(), dy.data(), dw.data(), nullptr);
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(pass_flops(p, pass) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Memory roofline: stream the pass's compulsory bytes once (reads of a and b, writes of out).
void BM_StreamCeiling(benchmark::State& st, DwShape s, Pass pass) {
  const DepthwiseConv2dParams p = make_params(s);
  const int64_t xn = p.n * p.c * p.h * p.w, yn = p.n * p.k() * p.win.p * p.win.q;
  auto a = random_vec(pass == kBackwardData ? yn : xn, 4), b = random_vec(yn, 5);
  std::vector<float> out(static_cast<size_t>(pass == kBackwardData ? xn : yn));
  const float* ap = a.data();
  const float* bp = b.data();
  float* op = out.data();
  const int64_t n = static_cast<int64_t>(out.size());
  for (auto _ : st) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 14), [&](const tbb::blocked_range<int64_t>& r) {
      if (pass == kBackwardFilter) {  // reads x and dy, writes ~nothing: a dot product per chunk
        float acc = 0;
        for (int64_t i = r.begin(); i < r.end(); ++i) acc += ap[i] * bp[i];
        op[r.begin()] = acc;
      } else {
        for (int64_t i = r.begin(); i < r.end(); ++i) op[i] = 0.5f * ap[i];
      }
    });
    benchmark::ClobberMemory();
  }
  st.counters["GB/s"] = benchmark::Counter(pass_bytes(p, pass) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Dense-GEMM ceiling: a cube GEMM with the pass's FLOPs.
void BM_SgemmCeiling(benchmark::State& st, DwShape s, Pass pass) {
  const DepthwiseConv2dParams p = make_params(s);
  const int m = static_cast<int>(std::cbrt(pass_flops(p, pass) / 2));
  auto a = random_vec(int64_t{m} * m, 6), b = random_vec(int64_t{m} * m, 7);
  std::vector<float> c(static_cast<size_t>(int64_t{m} * m));
  openblas_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0f, a.data(), m, b.data(), m, 0.0f, c.data(), m);
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * m * m * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

#define FASTNN_DW_BENCH(layer, shape, pass)                                                                  \
  BENCHMARK_CAPTURE(BM_Depthwise, layer##_##pass, shape, pass)->UseRealTime()->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_DepthwiseReference, layer##_##pass, shape, pass)                                      \
      ->UseRealTime()                                                                                        \
      ->Unit(benchmark::kMillisecond);                                                                       \
  BENCHMARK_CAPTURE(BM_StreamCeiling, layer##_##pass, shape, pass)->UseRealTime()->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_SgemmCeiling, layer##_##pass, shape, pass)->UseRealTime()->Unit(benchmark::kMillisecond);

FASTNN_DW_BENCH(c32_112, k112, kForward)
FASTNN_DW_BENCH(c32_112, k112, kBackwardData)
FASTNN_DW_BENCH(c32_112, k112, kBackwardFilter)
FASTNN_DW_BENCH(c128_56, k56, kForward)
FASTNN_DW_BENCH(c128_56, k56, kBackwardData)
FASTNN_DW_BENCH(c128_56, k56, kBackwardFilter)
FASTNN_DW_BENCH(c512_14, k14, kForward)
FASTNN_DW_BENCH(c512_14, k14, kBackwardData)
FASTNN_DW_BENCH(c512_14, k14, kBackwardFilter)
FASTNN_DW_BENCH(c1024_7, k7, kForward)
FASTNN_DW_BENCH(c1024_7, k7, kBackwardData)
FASTNN_DW_BENCH(c1024_7, k7, kBackwardFilter)

}  // namespace
}  // namespace fastnn::ops

BENCHMARK_MAIN();
