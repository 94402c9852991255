// The classifier head on the GPU (trainer/head/classifier_head_cuda.h, trainer/runner/head_step_cuda.h)
// against the CPU head, the oracle:
// - initial weights bitwise the CPU's (replicated and sharded rows);
// - one training step of softmax, arcface (samples in the threshold branch and near cos = 1 included),
//   cosface, the combined margin and easy_margin, on a small head and on one with thousands of classes
//   (many blocks per row): the loss, top-1/top-5 counts, the feature and weight gradients within f32
//   tolerance of ClassifierHead<float>; evaluation likewise;
// - top-5 that counts every position: each label the class at position 1..6 of its CPU logits row, two
//   identical rows in different threads of a block and on different ranks tying at the top of some
//   rows (the smaller class first), in one process, over NCCL in a world of one, on 2 and 3 ranks, and
//   in evaluation;
// - sharded over NCCL in one process (every collective run, a world of one): bitwise the same head
//   without collectives; two and three ranks as threads on one GPU (a test world of device
//   collectives; a rank's error fails the test, naming the rank, without hanging the others): the
//   CPU's one-process head on the global batch;
// - PartialFC: at sample_ratio 1 through the sampled path bitwise the full device head; at 0.5 the CPU
//   head's sample and its compact gradients.
// The CUDA runner with a head against the CPU runner: head_runner_cuda_gpu_test.cpp.
// Skipped without a CUDA device (one skipping test in CPU-only builds).
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(HeadCudaGpu, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/comm/communicator.h"
#include "tests/unit/trainer/cuda_test_util.h"
#include "tests/unit/trainer/thread_world_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/cuda/runtime.h"
#include "trainer/head/classifier_head.h"
#include "trainer/head/classifier_head_cuda.h"
#include "trainer/head/head_config.h"
#include "trainer/head/head_math.h"
#include "trainer/head/head_memory.h"
#include "trainer/head/margin.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::head {
namespace {

// ---- device buffers ----

template <typename T>
T* device_copy(const std::vector<T>& host, std::vector<Tensor>& keep) {
  Tensor t = Tensor::empty({static_cast<int64_t>(std::max<size_t>(host.size(), 1) * sizeof(T))}, DType::kU8, Device::kCuda);
  // On the current stream and waited for: a cudaMemcpy runs on the legacy stream, which the head's
  // non-blocking stream does not wait for, and returns from pageable memory before the bytes land (GPU
  // the H200 run of 2026-11-27 caught the head reading zero features: a loss of ln K, 2 in 20 repeats).
  const cudaStream_t s = cuda::current_stream();
  if (!host.empty()) CUDA_CHECK(cudaMemcpyAsync(t.raw(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  keep.push_back(t);
  return static_cast<T*>(t.raw());
}

template <typename T>
std::vector<T> host_copy(const T* device, size_t count) {
  std::vector<T> out(count);
  const cudaStream_t s = cuda::current_stream();
  if (count) CUDA_CHECK(cudaMemcpyAsync(out.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

// max |a - b| <= tol * max(max |b|, floor): gradients compared relative to their largest element.
void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const std::string& what,
                  double floor = 1e-12) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = floor, worst = 0;
  size_t at = 0;
  for (float v : b) scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::isfinite(a[i])) << what << " at " << i;
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst, tol * scale) << what << ": worst at " << at << " (" << a[at] << " vs " << b[at] << "), scale " << scale;
}

// ---- a problem: features crafted against the head's initial rows ----

// A row written over a head's initial weights (its global class and values), on every head alike.
struct RowOverride {
  int64_t cls;
  std::vector<float> values;
};

struct Problem {
  int64_t classes, dim, batch;
  std::vector<float> x;
  std::vector<int64_t> labels;
  std::vector<RowOverride> rows = {};  // applied to each head's initial weights before its step
};

void apply_rows(ClassifierHead<float>& h, const Problem& p) {
  for (const RowOverride& r : p.rows)
    if (r.cls >= h.row_begin() && r.cls < h.row_end())
      std::copy(r.values.begin(), r.values.end(), h.weights().begin() + (r.cls - h.row_begin()) * p.dim);
}

// Ordered on `s` after the head's initialisation.
void apply_rows(CudaClassifierHead& h, const Problem& p, cudaStream_t s) {
  for (const RowOverride& r : p.rows)
    if (r.cls >= h.row_begin() && r.cls < h.row_end())
      CUDA_CHECK(cudaMemcpyAsync(h.weights() + (r.cls - h.row_begin()) * p.dim, r.values.data(), r.values.size() * sizeof(float),
                                 cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));  // r.values is pageable host memory
}

// A quarter of the samples point along their class's row at an angle of about 0.2 (cos near 1, where
// the margin's slope grows like 1/theta: not so near that f32 rounding of cos moves it by more than the
// tolerance), a quarter against it (cos near -1: ArcFace's threshold branch), the rest random.
Problem make_problem(int64_t classes, int64_t dim, int64_t batch, uint32_t seed, const std::vector<float>& w) {
  Problem p{classes, dim, batch, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float spread = 0.2f / std::sqrt(static_cast<float>(dim));
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t y = static_cast<int64_t>(rng() % static_cast<uint32_t>(classes));
    p.labels.push_back(y);
    const int kind = static_cast<int>(i % 4);
    double norm = 0;
    for (int64_t d = 0; d < dim; ++d) norm += static_cast<double>(w[static_cast<size_t>(y * dim + d)]) * w[static_cast<size_t>(y * dim + d)];
    const float inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (int64_t d = 0; d < dim; ++d) {
      const float unit = w[static_cast<size_t>(y * dim + d)] * inv;
      const float v = kind == 0 ? unit + spread * nd(rng) : kind == 1 ? -unit + spread * nd(rng) : nd(rng) / std::sqrt(static_cast<float>(dim));
      p.x.push_back(3.0f * v);
    }
  }
  return p;
}

struct Outcome {
  HeadResult r;
  std::vector<float> dx, dw;  // dw: compact on the PartialFC path
  std::vector<int64_t> sampled;
};

HeadOptions options_for(int64_t classes, int64_t dim, const MarginSpec& m, bool sharded, double ratio = 1.0,
                        bool force_sampled = false) {
  return {.num_classes = classes, .emb_dim = dim, .margin = m, .sharded = sharded, .sample_ratio = ratio, .seed = 5,
          .force_sampled_path = force_sampled};
}

Outcome cpu_step(const HeadOptions& o, const Problem& p, uint64_t step = 3) {
  ClassifierHead<float> h(o, nullptr);
  apply_rows(h, p);
  Outcome out;
  out.dx.resize(p.x.size());
  out.r = h.train(p.x.data(), p.labels.data(), p.batch, step, out.dx.data());
  out.dw.assign(h.gradients().begin(), h.gradients().end());
  out.sampled = h.sampled_rows();
  return out;
}

Outcome device_step(const HeadOptions& o, const Problem& p, HeadCollectives* comm = nullptr, uint64_t step = 3) {
  std::vector<Tensor> keep;
  CudaClassifierHead h(o, comm);
  cudaStream_t s = cuda::current_stream();
  apply_rows(h, p, s);
  float* x = device_copy(p.x, keep);
  int64_t* y = device_copy(p.labels, keep);
  float* dx = device_copy(std::vector<float>(p.x.size(), std::nanf("")), keep);  // unwritten elements fail
  h.train(x, DType::kF32, y, DType::kI64, p.batch, step, dx, DType::kF32, nullptr, s);
  Outcome out;
  out.r = h.results(s);
  out.dx = host_copy(dx, p.x.size());
  const int64_t rows = h.sampled_path() ? h.sampled_count() : h.rows();
  out.dw = host_copy(h.gradients(), static_cast<size_t>(rows * p.dim));
  out.sampled = h.sampled_rows();
  return out;
}

void expect_outcomes_close(const Outcome& gpu, const Outcome& cpu, const std::string& what, double tol = 1e-4) {
  EXPECT_NEAR(gpu.r.loss, cpu.r.loss, tol * std::max(1.0, std::abs(cpu.r.loss))) << what;
  EXPECT_EQ(gpu.r.correct, cpu.r.correct) << what;
  EXPECT_EQ(gpu.r.correct_top5, cpu.r.correct_top5) << what;
  EXPECT_EQ(gpu.r.examples, cpu.r.examples) << what;
  EXPECT_EQ(gpu.sampled, cpu.sampled) << what;
  expect_close(gpu.dx, cpu.dx, tol, what + " dx");
  expect_close(gpu.dw, cpu.dw, tol, what + " dw");
}

std::vector<float> cpu_initial_rows(const HeadOptions& o) {
  ClassifierHead<float> h(o, nullptr);
  return {h.weights().begin(), h.weights().end()};
}

struct NamedSpec {
  std::string name;
  MarginSpec spec;
};

std::vector<NamedSpec> specs() {
  return {{"softmax", margin_spec("softmax", 0.5, 64, {}, {}, {}, false)},
          {"arcface", margin_spec("arcface", 0.5, 64, {}, {}, {}, false)},
          {"cosface", margin_spec("cosface", 0.35, 30, {}, {}, {}, false)},
          {"combined", margin_spec("arcface", 0.5, 32, 1.1, 0.3, 0.1, false)},
          {"easy_margin", margin_spec("arcface", 0.5, 16, {}, {}, {}, true)}};
}

TEST(HeadCudaGpu, InitialWeightsAreTheCpuHeadsBitwise) {
  REQUIRE_GPU();
  for (bool sharded : {false, true}) {
    const HeadOptions o = options_for(1001, 24, specs()[1].spec, sharded);
    CudaClassifierHead h(o, nullptr);
    EXPECT_EQ(host_copy(h.weights(), static_cast<size_t>(h.rows() * h.emb_dim())), cpu_initial_rows(o));
  }
}

TEST(HeadCudaGpu, OneStepMatchesTheCpuHeadForEveryMargin) {
  REQUIRE_GPU();
  for (const auto& [classes, dim, batch] : {std::tuple<int64_t, int64_t, int64_t>{37, 16, 12}, {3001, 64, 33}}) {
    for (const NamedSpec& m : specs()) {
      const HeadOptions o = options_for(classes, dim, m.spec, false);
      const Problem p = make_problem(classes, dim, batch, 7, cpu_initial_rows(o));
      expect_outcomes_close(device_step(o, p), cpu_step(o, p), m.name + " " + std::to_string(classes) + " classes");
    }
  }
}

HeadResult cpu_evaluation(const HeadOptions& o, const Problem& p) {
  ClassifierHead<float> cpu(o, nullptr);
  apply_rows(cpu, p);
  return cpu.evaluate(p.x.data(), p.labels.data(), p.batch);
}

HeadResult device_evaluation(const HeadOptions& o, const Problem& p) {
  std::vector<Tensor> keep;
  CudaClassifierHead gpu(o, nullptr);
  cudaStream_t s = cuda::current_stream();
  apply_rows(gpu, p, s);
  gpu.evaluate(device_copy(p.x, keep), DType::kF32, device_copy(p.labels, keep), DType::kI64, p.batch, s);
  return gpu.results(s);
}

void expect_results_close(const HeadResult& got, const HeadResult& want, const std::string& what) {
  EXPECT_NEAR(got.loss, want.loss, 1e-4 * std::abs(want.loss)) << what;
  EXPECT_EQ(got.correct, want.correct) << what;
  EXPECT_EQ(got.correct_top5, want.correct_top5) << what;
  EXPECT_EQ(got.examples, want.examples) << what;
}

TEST(HeadCudaGpu, EvaluationMatchesTheCpuHead) {
  REQUIRE_GPU();
  const HeadOptions o = options_for(3001, 64, specs()[1].spec, true);
  const Problem p = make_problem(3001, 64, 40, 9, cpu_initial_rows(o));
  expect_results_close(device_evaluation(o, p), cpu_evaluation(o, p), "arcface");
}

TEST(HeadCudaGpu, ABadLabelIsReportedWithTheSample) {
  REQUIRE_GPU();
  const HeadOptions o = options_for(37, 16, specs()[1].spec, false);
  Problem p = make_problem(37, 16, 8, 3, cpu_initial_rows(o));
  p.labels[5] = 37;
  try {
    device_step(o, p);
    FAIL() << "not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 37 of sample 5 is outside 0..36"), std::string::npos) << e.what();
  }
}

// ---- sharded: NCCL in one process; two ranks as threads on one GPU ----

TEST(HeadCudaGpu, ShardedOverNcclInOneProcessIsTheHeadWithoutCollectives) {
  REQUIRE_GPU();
  if (!loop::nccl_built()) GTEST_SKIP() << "built without NCCL";
  LocalCommunicator host;
  auto nccl = loop::make_nccl_collectives(host, 60.0);
  ASSERT_NE(nccl->head_collectives(), nullptr);
  for (const NamedSpec& m : specs()) {
    for (double ratio : {1.0, 0.5}) {
      const HeadOptions o = options_for(3001, 64, m.spec, true, ratio);
      const Problem p = make_problem(3001, 64, 33, 11, cpu_initial_rows(o));
      const Outcome with = device_step(o, p, nccl->head_collectives()), without = device_step(o, p);
      EXPECT_EQ(with.r.loss, without.r.loss) << m.name;
      EXPECT_EQ(with.r.correct, without.r.correct) << m.name;
      EXPECT_EQ(with.r.correct_top5, without.r.correct_top5) << m.name;
      EXPECT_EQ(with.dx, without.dx) << m.name;
      EXPECT_EQ(with.dw, without.dw) << m.name;
      expect_outcomes_close(with, cpu_step(o, p), m.name + " ratio " + std::to_string(ratio));
    }
  }
}

// Without a GPU: a rank that throws before its first meeting ends the world's other ranks (they throw
// at the broken barrier) and its error, not theirs, reaches the test's thread.
TEST(HeadCudaGpu, AThreadRankThatThrowsEndsTheWorldWithItsError) {
  for (int failing : {0, 1, 2}) {
    ThreadWorld w(3);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        try {
          if (r == failing) throw Error("rank broke");
          for (int k = 0; k < 100; ++k) {  // collectives the failing rank never joins
            w.post(r, nullptr);
            w.done();
          }
        } catch (...) {
          w.fail(r);
        }
      });
    for (auto& t : threads) t.join();
    try {
      w.rethrow_first();
      ADD_FAILURE() << "no error raised";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), str("rank ", failing, " of 3: rank broke"));
    }
  }
}

// Rank r's step in device_world: its n samples, its dx / W and its rows' dw into `out`.
void rank_step(ThreadWorld& w, const HeadOptions& o, const Problem& p, int r, int64_t n, Outcome& out,
               std::vector<HeadResult>& results, cudaStream_t s) {
  ThreadCollectives comm(w, r);
  std::vector<Tensor> keep;
  CudaClassifierHead h(o, &comm);
  apply_rows(h, p, s);
  const std::vector<float> xs(p.x.begin() + r * n * p.dim, p.x.begin() + (r + 1) * n * p.dim);
  const std::vector<int64_t> ys(p.labels.begin() + r * n, p.labels.begin() + (r + 1) * n);
  float* dx = device_copy(std::vector<float>(xs.size(), std::nanf("")), keep);
  h.train(device_copy(xs, keep), DType::kF32, device_copy(ys, keep), DType::kI64, n, 3, dx, DType::kF32, nullptr, s);
  results[static_cast<size_t>(r)] = h.results(s);
  const std::vector<float> mine = host_copy(dx, xs.size());
  for (size_t i = 0; i < mine.size(); ++i) out.dx[static_cast<size_t>(r * n * p.dim) + i] = mine[i] / static_cast<float>(w.world());
  const std::vector<float> dw = host_copy(h.gradients(), static_cast<size_t>(h.rows() * p.dim));
  std::copy(dw.begin(), dw.end(), out.dw.begin() + h.row_begin() * p.dim);
  CUDA_CHECK(cudaStreamSynchronize(s));
}

// W ranks as threads (each its own stream), each with n = batch / W of the samples: the global loss,
// the summed counts, each rank's dx / W at its samples and its rows' dw at their global rows. An error
// on any rank fails the test (raised here after every thread has ended), not the binary.
Outcome device_world(const HeadOptions& o, const Problem& p, int world) {
  ThreadWorld w(world);
  const int64_t n = p.batch / world;
  Outcome out;
  out.dx.assign(p.x.size(), 0);
  out.dw.assign(static_cast<size_t>(p.classes * p.dim), 0);
  std::vector<double> losses(static_cast<size_t>(world));
  std::vector<HeadResult> results(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      // Nothing may leave a thread (std::terminate would end the whole binary): the first error is
      // raised after the join. The rank's objects unwind before its stream is destroyed.
      try {
        cuda::init_backend(0);
        cudaStream_t s;
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        cuda::set_current_stream(s);
        try {
          rank_step(w, o, p, r, n, out, results, s);
        } catch (...) {
          w.fail(r);
        }
        cudaStreamSynchronize(s);  // the rank's buffers are freed on s
        cuda::set_current_stream(nullptr);
        CUDA_CHECK(cudaStreamDestroy(s));
      } catch (...) {
        w.fail(r);
      }
    });
  for (auto& t : threads) t.join();
  w.rethrow_first();
  out.r = results[0];
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(results[static_cast<size_t>(r)].loss, results[0].loss) << "every rank reports the global batch's loss";
    if (r > 0) {
      out.r.correct += results[static_cast<size_t>(r)].correct;
      out.r.correct_top5 += results[static_cast<size_t>(r)].correct_top5;
      out.r.examples += results[static_cast<size_t>(r)].examples;
    }
  }
  return out;
}

TEST(HeadCudaGpu, TwoAndThreeRanksOnOneGpuEqualTheCpuHeadInOneProcess) {
  REQUIRE_GPU();
  for (const NamedSpec& m : specs())
    for (int world : {2, 3}) {
      const HeadOptions o = options_for(3001, 64, m.spec, true);
      const Problem p = make_problem(3001, 64, 36, 13, cpu_initial_rows(o));
      const Outcome want = cpu_step(options_for(3001, 64, m.spec, false), p);  // one process, the global batch
      expect_outcomes_close(device_world(o, p, world), want, m.name + " x " + std::to_string(world));
    }
}

// Each sample's label is the class at position 1 + i % 6 of its CPU logits row (ordered as the top-5
// merge orders: higher first, equal values to the smaller class), so top-1 counts the first position,
// top-5 the first five and the sixth neither: a merge that loses or misorders any of positions 2-5
// changes correct_top5. Rows kA and kB are made identical (zero but for element 0), so samples along
// that element see them tie exactly (their dot products are one rounded product, in any summation
// order) at the top of their row: the smaller class, kA, is first, kB second. They fall in different
// threads of a block (700 % 256, 2300 % 256) and on different ranks at 2 and 3 ranks; samples 6, 7
// and 24, 25 (on the first and the last rank at 2 and 3 ranks) are those samples.
constexpr int64_t kTieA = 700, kTieB = 2300;

Problem ranked_problem(const HeadOptions& o, int64_t* want_top1, int64_t* want_top5) {
  const int64_t k = o.num_classes, d = o.emb_dim;
  Problem p = make_problem(k, d, 36, 23, cpu_initial_rows(o));
  std::vector<float> row(static_cast<size_t>(d), 0.0f);
  row[0] = 0.5f;
  p.rows = {{kTieA, row}, {kTieB, row}};
  for (int64_t i : {6, 7, 24, 25})
    for (int64_t e = 0; e < d; ++e) {
      float& v = p.x[static_cast<size_t>(i * d + e)];
      v = e == 0 ? 3.0f : 0.2f * v;  // at an angle of about 0.2 from the two rows (see make_problem)
    }
  HeadOptions one = o;
  one.sharded = false;
  ClassifierHead<float> ref(one, nullptr);
  apply_rows(ref, p);
  const std::vector<float> z = ref.logits(p.x.data(), p.batch);
  *want_top1 = *want_top5 = 0;
  for (int64_t i = 0; i < p.batch; ++i) {
    std::vector<int64_t> order(static_cast<size_t>(k));
    std::iota(order.begin(), order.end(), 0);
    const float* zi = &z[static_cast<size_t>(i * k)];
    std::partial_sort(order.begin(), order.begin() + 6, order.end(), [&](int64_t a, int64_t b) {
      return TopCandidates::better(zi[a], a, zi[b], b);
    });
    const int64_t position = 1 + i % 6;
    p.labels[static_cast<size_t>(i)] = order[static_cast<size_t>(position - 1)];
    *want_top1 += position == 1 ? 1 : 0;
    *want_top5 += position <= 5 ? 1 : 0;
  }
  for (int64_t i : {6, 24}) EXPECT_EQ(p.labels[static_cast<size_t>(i)], kTieA) << "sample " << i;
  for (int64_t i : {7, 25}) EXPECT_EQ(p.labels[static_cast<size_t>(i)], kTieB) << "sample " << i;
  return p;
}

TEST(HeadCudaGpu, TopFiveCountsEveryPositionAndTiesGoToTheSmallerClass) {
  REQUIRE_GPU();
  std::unique_ptr<runner::DeviceCollectives> nccl;
  LocalCommunicator host;
  if (loop::nccl_built()) nccl = loop::make_nccl_collectives(host, 60.0);
  for (const NamedSpec& m : {specs()[0], specs()[1]}) {
    const HeadOptions o = options_for(3001, 64, m.spec, true);
    int64_t top1 = 0, top5 = 0;
    const Problem p = ranked_problem(o, &top1, &top5);
    ASSERT_EQ(top1, 6);
    ASSERT_EQ(top5, 30);
    // The construction holds on the CPU head (one process), the oracle of every device run below.
    const Outcome want = cpu_step(options_for(3001, 64, m.spec, false), p);
    ASSERT_EQ(want.r.correct, top1) << m.name;
    ASSERT_EQ(want.r.correct_top5, top5) << m.name;
    expect_outcomes_close(device_step(o, p), want, m.name + " one process");
    if (nccl) expect_outcomes_close(device_step(o, p, nccl->head_collectives()), want, m.name + " NCCL, a world of one");
    for (int world : {2, 3}) expect_outcomes_close(device_world(o, p, world), want, m.name + " x " + std::to_string(world));
    const HeadResult evaluated = device_evaluation(o, p);
    EXPECT_EQ(evaluated.correct, top1) << m.name << " evaluate";
    EXPECT_EQ(evaluated.correct_top5, top5) << m.name << " evaluate";
    expect_results_close(evaluated, cpu_evaluation(o, p), m.name + " evaluate");
  }
}

// ---- PartialFC ----

TEST(HeadCudaGpu, PartialFcAtRatioOneIsTheFullDeviceHeadBitwise) {
  REQUIRE_GPU();
  for (const NamedSpec& m : specs()) {
    const HeadOptions full = options_for(3001, 64, m.spec, true), sampled = options_for(3001, 64, m.spec, true, 1.0, true);
    const Problem p = make_problem(3001, 64, 33, 17, cpu_initial_rows(full));
    const Outcome a = device_step(full, p), b = device_step(sampled, p);
    ASSERT_EQ(b.sampled.size(), 3001u);
    EXPECT_EQ(a.r.loss, b.r.loss) << m.name;
    EXPECT_EQ(a.dx, b.dx) << m.name;
    EXPECT_EQ(a.dw, b.dw) << m.name;
  }
}

TEST(HeadCudaGpu, PartialFcDrawsTheCpuHeadsSampleAndItsGradients) {
  REQUIRE_GPU();
  for (const NamedSpec& m : specs()) {
    const HeadOptions o = options_for(3001, 64, m.spec, true, 0.5);
    const Problem p = make_problem(3001, 64, 33, 19, cpu_initial_rows(o));
    const Outcome want = cpu_step(o, p), got = device_step(o, p);
    ASSERT_GT(want.sampled.size(), 1000u);
    ASSERT_LT(want.sampled.size(), 2000u);
    expect_outcomes_close(got, want, m.name);
  }
}

}  // namespace
}  // namespace fastnn::head

#endif  // FASTNN_HAVE_CUDA
