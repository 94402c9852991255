// CPU conv2d (im2col + OpenBLAS GEMM, oneTBB over the batch) on LeNet shapes (TF-slim LeNet: 5x5 SAME,
// batch 64): conv1 1x28x28 -> 32, conv2 32x14x14 -> 64. Each pass is reported in GFLOP/s next to its
// ceiling measured in the same run: one raw cblas_sgemm of the equivalent size (the whole batch as a
// single GEMM, OpenBLAS on all cores), also on one thread for reference.
//
//   bench_ops_cpu --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <thread>
#include <vector>

#include "trainer/ops/conv2d.h"
#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace {

struct ConvShape {
  int64_t n, c, hw, k, r;
};
constexpr ConvShape kConv1{64, 1, 28, 32, 5};
constexpr ConvShape kConv2{64, 32, 14, 64, 5};

enum Pass { kForward = 0, kBackwardData = 1, kBackwardFilter = 2, kStep = 3 };  // kStep: all three

Conv2dParams make_params(const ConvShape& s) {
  const std::vector<TensorSpec> x{{.name = "x", .shape = {s.n, s.c, s.hw, s.hw}, .dtype = DType::kF32}};
  return conv2d_params({{"filters", s.k}, {"kernel", s.r}, {"padding", "same"}}, x);
}

std::vector<float> random_vec(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = u(rng);
  return v;
}

double conv_flops(const Conv2dParams& p) {
  return 2.0 * static_cast<double>(p.k) * static_cast<double>(p.col_rows() / p.groups) *
         static_cast<double>(p.n * p.col_cols());
}

void BM_Conv(benchmark::State& st, ConvShape s, Pass pass) {
  const Conv2dParams p = make_params(s);
  const int64_t slots = cpu::parallel_slots(p.n);
  auto x = random_vec(p.n * p.c * p.h * p.w, 1), w = random_vec(p.weight_numel(), 2), b = random_vec(p.k, 3);
  auto dy = random_vec(p.n * p.k * p.col_cols(), 4);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size()), db(b.size());
  std::vector<float> ws(static_cast<size_t>(cpu::conv2d_workspace_elems(p, slots)));
  for (auto _ : st) {
    const bool step = pass == kStep;
    if (pass == kForward || step) cpu::conv2d_forward<float>(p, x.data(), w.data(), b.data(), y.data(), ws);
    if (pass == kBackwardData || step) cpu::conv2d_backward_data<float>(p, w.data(), dy.data(), dx.data(), ws);
    if (pass == kBackwardFilter || step)
      cpu::conv2d_backward_filter<float>(p, x.data(), dy.data(), dw.data(), db.data(), ws);
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter((pass == kStep ? 3 : 1) * conv_flops(p) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  st.counters["slots"] = static_cast<double>(slots);
}

// The pass as one GEMM over the whole batch (row-major, as the conv kernel lays it out):
//   forward         Y[K, NPQ]   = W[K, CRS]     x col[CRS, NPQ]
//   backward data   dcol[CRS, NPQ] = W^T[CRS, K] x dY[K, NPQ]
//   backward filter dW[K, CRS]  = dY[K, NPQ]    x col^T[NPQ, CRS]
void BM_SgemmCeiling(benchmark::State& st, ConvShape s, Pass pass) {
  const Conv2dParams p = make_params(s);
  const int threads = static_cast<int>(st.range(0));
  const int kf = static_cast<int>(p.k), crs = static_cast<int>(p.col_rows()), npq = static_cast<int>(p.n * p.col_cols());
  int m = kf, n = npq, k = crs;
  if (pass == kBackwardData) m = crs, n = npq, k = kf;
  if (pass == kBackwardFilter) m = kf, n = crs, k = npq;
  auto a = random_vec(int64_t{m} * k, 5), bm = random_vec(int64_t{k} * n, 6);
  std::vector<float> c(static_cast<size_t>(int64_t{m} * n));
  openblas_set_num_threads(threads);
  for (auto _ : st) {
    if (pass == kForward)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, bm.data(), n, 0.0f, c.data(), n);
    if (pass == kBackwardData)  // A stored [K, CRS]
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), m, bm.data(), n, 0.0f, c.data(), n);
    if (pass == kBackwardFilter)  // B stored [CRS, NPQ]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, bm.data(), k, 0.0f, c.data(), n);
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);  // what the conv kernels use; they also reset it themselves
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

#define FASTNN_CONV_BENCH(layer, shape, pass)                                                              \
  BENCHMARK_CAPTURE(BM_Conv, layer##_##pass, shape, pass)->UseRealTime()->Unit(benchmark::kMillisecond);   \
  BENCHMARK_CAPTURE(BM_SgemmCeiling, layer##_##pass, shape, pass)                                          \
      ->Arg(static_cast<int64_t>(std::thread::hardware_concurrency()))                                     \
      ->Arg(1)                                                                                             \
      ->ArgName("threads")                                                                                 \
      ->UseRealTime()                                                                                      \
      ->Unit(benchmark::kMillisecond);

FASTNN_CONV_BENCH(conv1, kConv1, kForward)
FASTNN_CONV_BENCH(conv1, kConv1, kBackwardFilter)
FASTNN_CONV_BENCH(conv2, kConv2, kForward)
FASTNN_CONV_BENCH(conv2, kConv2, kBackwardData)
FASTNN_CONV_BENCH(conv2, kConv2, kBackwardFilter)
// A LeNet conv2 training step (forward, backward data, backward filter + bias), as the trainer runs it.
BENCHMARK_CAPTURE(BM_Conv, conv2_step, kConv2, kStep)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fastnn::ops

BENCHMARK_MAIN();
