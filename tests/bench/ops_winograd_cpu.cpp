// fastnn's own F(4x4, 3x3) Winograd passes (trainer/ops/winograd_f43.h) beside oneDNN's direct
// convolution on the same NHWC tensors (the conv2d kernel the trainer makes where Winograd is off), per
// pass, on ResNet-50's 3x3 layers (C = K, "same" padding, no bias). The Winograd passes include what the
// trainer runs with them: the filters' transform for the forward and backward-data passes. Threads: all
// of the machine's (oneTBB's default arena, as in training).
//
//   bench_ops_winograd_cpu --benchmark_filter=b8 --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "trainer/graph/net_plan.h"
#include "trainer/ops/blas_core.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/op_case.h"
#include "trainer/ops/winograd_f43.h"

namespace fastnn::ops {
namespace {

struct Layer {
  int64_t n, c, hw;
};

enum Pass { kForward, kBackwardData, kBackwardWeights };

std::vector<float> random_floats(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& e : v) e = u(rng);
  return v;
}

void set_counters(benchmark::State& st, const Layer& l) {
  const double macs = static_cast<double>(l.n) * l.hw * l.hw * l.c * l.c * 9;
  st.counters["GFLOP/s"] = benchmark::Counter(2 * macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// oneDNN's direct passes through the conv2d kernel (ScopedDirectConvolutions: no Winograd of either kind).
void BM_Direct(benchmark::State& st, Layer l, Pass pass) {
  if (!use_dnnl_kernels()) {
    st.SkipWithError("built without oneDNN");
    return;
  }
  const std::vector<TensorSpec> specs{{.name = "x", .shape = {l.n, l.c, l.hw, l.hw}, .dtype = DType::kF32}};
  const Attrs attrs{{"filters", l.c}, {"kernel", 3}, {"padding", "same"}, {"bias", false}};
  std::unique_ptr<OpKernel> k;
  {
    const ScopedDirectConvolutions direct;
    k = graph::builtin_op_registry().create_nhwc("conv2d", Device::kCpu, attrs, specs);
  }
  KernelTensors t = allocate_kernel_tensors(k->signature());
  for (std::vector<Tensor>* ts : {&t.inputs, &t.params, &t.d_outputs})
    for (Tensor& x : *ts) fill_uniform(x, -1, 1, 1, 0);
  for (Tensor& x : t.inputs) x.set_layout(Layout::kNHWC);
  if (pass == kBackwardData) t.d_params[0] = Tensor();
  if (pass == kBackwardWeights) t.d_inputs[0] = Tensor();
  for (auto _ : st) {
    if (pass == kForward) k->forward(t.forward_args(true));
    else k->backward(t.backward_args(true));
  }
  set_counters(st, l);
}

void BM_OwnWinograd(benchmark::State& st, Layer l, Pass pass) {
  if (!cpu::this_cpu_features().avx2_fma) {
    st.SkipWithError("fastnn's Winograd needs AVX2 and FMA");
    return;
  }
  const cpu::WinogradShape s{.n = l.n, .h = l.hw, .w = l.hw, .c = l.c, .k = l.c, .p = l.hw, .q = l.hw, .pad_top = 1, .pad_left = 1};
  // Backward-data: the convolution of dy with the turned filters (the same shape here, C = K).
  const cpu::WinogradF43 conv(s);
  const std::vector<float> x = random_floats(l.n * l.hw * l.hw * l.c, 1), w = random_floats(l.c * l.c * 9, 2);
  const std::vector<float> zeros(static_cast<size_t>(l.c), 0.0f);
  std::vector<float> y(x.size()), dw(w.size()), u(cpu::WinogradF43::weights_floats(l.c, l.c));
  std::vector<std::byte> scratch(std::max(conv.workspace_bytes(), conv.filter_gradient_workspace_bytes()));
  for (auto _ : st) {
    if (pass == kBackwardWeights) {
      conv.filter_gradient(x.data(), x.data(), dw.data(), scratch.data());  // dy: any tensor of y's shape
      continue;
    }
    if (pass == kForward) cpu::WinogradF43::transform_weights(w.data(), l.c, l.c, u.data());
    else cpu::WinogradF43::transform_flipped_weights(w.data(), l.c, l.c, u.data());
    conv.forward(x.data(), u.data(), zeros.data(), nullptr, cpu::WinogradTail::kNone, y.data(), scratch.data());
  }
  set_counters(st, l);
}

// The filters' transform alone (each training forward and backward-data pass makes one).
void BM_TransformWeights(benchmark::State& st, int64_t channels) {
  const std::vector<float> w = random_floats(channels * channels * 9, 2);
  std::vector<float> u(cpu::WinogradF43::weights_floats(channels, channels));
  for (auto _ : st) cpu::WinogradF43::transform_weights(w.data(), channels, channels, u.data());
  st.counters["GB/s"] = benchmark::Counter(static_cast<double>(sizeof(float) * (w.size() + u.size())) * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_TransformWeights, c256, 256)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TransformWeights, c512, 512)->UseRealTime()->Unit(benchmark::kMillisecond);

#define FASTNN_WINOGRAD_BENCH(name, layer)                                                                      \
  BENCHMARK_CAPTURE(BM_Direct, name##_fwd, layer, kForward)->UseRealTime()->Unit(benchmark::kMillisecond);       \
  BENCHMARK_CAPTURE(BM_OwnWinograd, name##_fwd, layer, kForward)->UseRealTime()->Unit(benchmark::kMillisecond);  \
  BENCHMARK_CAPTURE(BM_Direct, name##_dgrad, layer, kBackwardData)->UseRealTime()->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_OwnWinograd, name##_dgrad, layer, kBackwardData)                                          \
      ->UseRealTime()                                                                                            \
      ->Unit(benchmark::kMillisecond);                                                                           \
  BENCHMARK_CAPTURE(BM_Direct, name##_wgrad, layer, kBackwardWeights)                                           \
      ->UseRealTime()                                                                                            \
      ->Unit(benchmark::kMillisecond);                                                                           \
  BENCHMARK_CAPTURE(BM_OwnWinograd, name##_wgrad, layer, kBackwardWeights)                                      \
      ->UseRealTime()                                                                                            \
      ->Unit(benchmark::kMillisecond);

// ResNet-50's 3x3 layers at the training benchmark's batch 8.
FASTNN_WINOGRAD_BENCH(b8_c64_56, (Layer{8, 64, 56}))
FASTNN_WINOGRAD_BENCH(b8_c128_28, (Layer{8, 128, 28}))
FASTNN_WINOGRAD_BENCH(b8_c256_14, (Layer{8, 256, 14}))
FASTNN_WINOGRAD_BENCH(b8_c512_7, (Layer{8, 512, 7}))
// ResNet-20's (CIFAR-sized, 32x32 inputs) at its training benchmark's batch 64.
FASTNN_WINOGRAD_BENCH(b64_c16_32, (Layer{64, 16, 32}))
FASTNN_WINOGRAD_BENCH(b64_c32_16, (Layer{64, 32, 16}))
FASTNN_WINOGRAD_BENCH(b64_c64_8, (Layer{64, 64, 8}))

}  // namespace
}  // namespace fastnn::ops

BENCHMARK_MAIN();
