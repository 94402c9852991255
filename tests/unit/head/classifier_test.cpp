// The model-parallel classifier head (trainer/head/classifier_head.h) in double precision: W ranks of
// an in-process world against one process, against a plain fully connected layer + softmax written
// out here, and against finite differences (margin losses, their threshold branch, cos -> 1).
#include "trainer/head/classifier_head.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/check.h"
#include "trainer/comm/thread_communicator.h"
#include "trainer/head/head_memory.h"

namespace fastnn::head {
namespace {

constexpr int64_t kDim = 6;

struct Problem {
  int64_t classes = 11, batch = 12;  // the global batch; split over ranks
  std::vector<double> x;
  std::vector<int64_t> labels;
};

Problem make_problem(uint32_t seed, int64_t classes = 11, int64_t batch = 12) {
  Problem p{classes, batch, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  for (int64_t i = 0; i < batch * kDim; ++i) p.x.push_back(n(rng));
  for (int64_t i = 0; i < batch; ++i) p.labels.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(classes)));
  return p;
}

MarginSpec softmax_spec() { return margin_spec("softmax", 0.5, 64, {}, {}, {}, false); }
MarginSpec arcface_spec(double scale = 8) { return margin_spec("arcface", 0.5, scale, {}, {}, {}, false); }

HeadOptions options(const Problem& p, const MarginSpec& m, bool sharded) {
  return {.num_classes = p.classes, .emb_dim = kDim, .margin = m, .sharded = sharded, .seed = 5};
}

// One rank's view after a training step: the loss, its samples' feature gradient and its weight rows'
// gradient (placed at their global rows).
struct Outcome {
  double loss = 0;
  int64_t correct = 0, correct_top5 = 0;
  std::vector<double> dx, dw, w;
};

Outcome run_world(const Problem& p, const MarginSpec& m, int world, bool sharded = true, double ratio = 1,
                  bool force_sampled = false) {
  Outcome out;
  out.dx.assign(p.x.size(), 0);
  out.dw.assign(static_cast<size_t>(p.classes * kDim), 0);
  out.w.assign(out.dw.size(), 0);
  auto comms = make_thread_world(world);
  std::vector<double> losses(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  std::mutex mu;
  const int64_t n = p.batch / world;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      HeadOptions o = options(p, m, sharded);
      o.sample_ratio = ratio;
      o.force_sampled_path = force_sampled;
      ClassifierHead<double> h(o, comms[static_cast<size_t>(r)].get());
      std::vector<double> dx(static_cast<size_t>(n * kDim));
      const HeadResult res = h.train(p.x.data() + r * n * kDim, p.labels.data() + r * n, n, 3, dx.data());
      std::lock_guard<std::mutex> lock(mu);
      losses[static_cast<size_t>(r)] = res.loss;
      out.correct += res.correct;
      out.correct_top5 += res.correct_top5;
      std::copy(dx.begin(), dx.end(), out.dx.begin() + r * n * kDim);
      const auto& rows = h.sampled_rows();
      for (int64_t j = 0; j < (h.sampled_path() ? static_cast<int64_t>(rows.size()) : h.rows()); ++j) {
        const int64_t row = h.row_begin() + (h.sampled_path() ? rows[static_cast<size_t>(j)] : j);
        std::copy_n(h.gradients().data() + j * kDim, kDim, out.dw.begin() + row * kDim);
      }
      std::copy(h.weights().begin(), h.weights().end(), out.w.begin() + h.row_begin() * kDim);
    });
  for (auto& t : threads) t.join();
  for (double l : losses) EXPECT_EQ(l, losses[0]) << "every rank reports the global batch's loss";
  out.loss = losses[0];
  return out;
}

void expect_near_all(const std::vector<double>& a, const std::vector<double>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

// Fully connected (no bias) + softmax cross-entropy, mean over the batch, written out with loops.
double reference_softmax(const Problem& p, const std::vector<double>& w, std::vector<double>* dx,
                         std::vector<double>* dw) {
  double loss = 0;
  dx->assign(p.x.size(), 0);
  dw->assign(w.size(), 0);
  for (int64_t i = 0; i < p.batch; ++i) {
    std::vector<double> z(static_cast<size_t>(p.classes));
    double mx = -1e300;
    for (int64_t c = 0; c < p.classes; ++c) {
      for (int64_t d = 0; d < kDim; ++d) z[c] += p.x[i * kDim + d] * w[c * kDim + d];
      mx = std::max(mx, z[c]);
    }
    double se = 0;
    for (double v : z) se += std::exp(v - mx);
    loss += std::log(se) + mx - z[static_cast<size_t>(p.labels[i])];
    for (int64_t c = 0; c < p.classes; ++c) {
      const double g = (std::exp(z[c] - mx) / se - (c == p.labels[i] ? 1.0 : 0.0)) / static_cast<double>(p.batch);
      for (int64_t d = 0; d < kDim; ++d) {
        (*dx)[i * kDim + d] += g * w[c * kDim + d];
        (*dw)[c * kDim + d] += g * p.x[i * kDim + d];
      }
    }
  }
  return loss / static_cast<double>(p.batch);
}

// The margin loss written out (no gradient): for finite differences.
double reference_margin_loss(const Problem& p, const std::vector<double>& x, const std::vector<double>& w,
                             const MarginSpec& m) {
  double loss = 0;
  for (int64_t i = 0; i < p.batch; ++i) {
    double xn = 0;
    for (int64_t d = 0; d < kDim; ++d) xn += x[i * kDim + d] * x[i * kDim + d];
    std::vector<double> z(static_cast<size_t>(p.classes));
    double mx = -1e300;
    for (int64_t c = 0; c < p.classes; ++c) {
      double wn = 0, dot = 0;
      for (int64_t d = 0; d < kDim; ++d) {
        wn += w[c * kDim + d] * w[c * kDim + d];
        dot += x[i * kDim + d] * w[c * kDim + d];
      }
      const double cosv = dot / std::sqrt(xn * wn);
      z[c] = c == p.labels[i] ? target_logit(cosv, m).logit : m.scale * cosv;
      mx = std::max(mx, z[c]);
    }
    double se = 0;
    for (double v : z) se += std::exp(v - mx);
    loss += std::log(se) + mx - z[static_cast<size_t>(p.labels[i])];
  }
  return loss / static_cast<double>(p.batch);
}

TEST(ClassifierHead, RowsSplitEvenlyAndInitialWeightsDoNotDependOnTheWorld) {
  const Problem p = make_problem(1);
  const Outcome one = run_world(p, softmax_spec(), 1);
  for (int w : {2, 3, 4}) {
    const Outcome many = run_world(p, softmax_spec(), w);
    EXPECT_EQ(many.w, one.w) << w << " ranks";
  }
  for (int w : {1, 2, 3, 7}) {
    int64_t covered = 0, smallest = p.classes, largest = 0;
    for (int r = 0; r < w; ++r) {
      const auto [b, e] = class_range(p.classes, w, r);
      EXPECT_EQ(b, covered);
      covered = e;
      smallest = std::min(smallest, e - b);
      largest = std::max(largest, e - b);
    }
    EXPECT_EQ(covered, p.classes);
    EXPECT_LE(largest - smallest, 1);
  }
}

TEST(ClassifierHead, OneRankEqualsAPlainFullyConnectedSoftmax) {
  const Problem p = make_problem(2);
  const Outcome one = run_world(p, softmax_spec(), 1);
  std::vector<double> dx, dw;
  const double loss = reference_softmax(p, one.w, &dx, &dw);
  EXPECT_NEAR(one.loss, loss, 1e-12);
  expect_near_all(one.dx, dx, 1e-12, "dx");
  expect_near_all(one.dw, dw, 1e-12, "dw");
  // Sharded over a world of one is the replicated head, bitwise.
  const Outcome replicated = run_world(p, softmax_spec(), 1, /*sharded=*/false);
  EXPECT_EQ(replicated.loss, one.loss);
  EXPECT_EQ(replicated.dx, one.dx);
  EXPECT_EQ(replicated.dw, one.dw);
}

TEST(ClassifierHead, ShardedOverTwoAndThreeRanksEqualsOneProcess) {
  const Problem p = make_problem(3);
  for (const MarginSpec& m : {softmax_spec(), arcface_spec(), margin_spec("cosface", 0.35, 16, {}, {}, {}, false),
                              margin_spec("arcface", 0.5, 8, 1.1, 0.3, 0.1, false)}) {
    const Outcome one = run_world(p, m, 1);
    for (int w : {2, 3}) {
      const Outcome many = run_world(p, m, w);
      EXPECT_NEAR(many.loss, one.loss, 1e-12) << w;
      // Each rank hands back W x its samples' gradient (the caller averages the backbone over W).
      std::vector<double> dx = many.dx;
      for (double& v : dx) v /= w;
      expect_near_all(dx, one.dx, 1e-12, "dx");
      expect_near_all(many.dw, one.dw, 1e-12, "dw");
      EXPECT_EQ(many.correct, one.correct);
      EXPECT_EQ(many.correct_top5, one.correct_top5);
    }
  }
}

// Central differences of the written-out margin loss against the head's gradients, at a point, a
// threshold-branch point (target at a wide angle) and a target almost parallel to its class row.
TEST(ClassifierHead, MarginGradientsMatchFiniteDifferences) {
  for (int shape = 0; shape < 4; ++shape) {
    Problem p = make_problem(10 + shape, 7, 6);
    ClassifierHead<double> probe(options(p, arcface_spec(), false), nullptr);
    const std::vector<double> w(probe.weights().begin(), probe.weights().end());
    if (shape > 0) {
      // Sample 0's feature made (anti)parallel to its class row: cos near -1 (the threshold branch),
      // near 1 (a 0.01 rad angle, above margin.h's frozen-derivative angle) and exactly 1 (finite only).
      const double sign = shape == 1 ? -1.0 : 1.0;
      const double tilt = shape == 3 ? 0.0 : 0.05;
      for (int64_t d = 0; d < kDim; ++d)
        p.x[static_cast<size_t>(d)] = sign * w[static_cast<size_t>(p.labels[0] * kDim + d)] * 3.0 + (d == 0 ? tilt : 0.0);
    }
    for (const MarginSpec& m : {arcface_spec(), margin_spec("arcface", 0.5, 8, {}, {}, {}, true),
                                margin_spec("cosface", 0.35, 8, {}, {}, {}, false),
                                margin_spec("arcface", 0.5, 8, 1.2, 0.4, 0.05, false)}) {
      ClassifierHead<double> h(options(p, m, false), nullptr);
      std::vector<double> dx(p.x.size());
      const HeadResult r = h.train(p.x.data(), p.labels.data(), p.batch, 0, dx.data());
      ASSERT_NEAR(r.loss, reference_margin_loss(p, p.x, w, m), 1e-12);
      const std::vector<double> dw(h.gradients().begin(), h.gradients().end());
      for (double v : dx) ASSERT_TRUE(std::isfinite(v));
      for (double v : dw) ASSERT_TRUE(std::isfinite(v));
      if (shape == 3) continue;  // exactly parallel: the derivative is margin.h's finite limit, not a slope
      const double eps = 1e-6;
      for (size_t k = 0; k < p.x.size(); ++k) {
        std::vector<double> xp = p.x, xm = p.x;
        xp[k] += eps;
        xm[k] -= eps;
        const double fd = (reference_margin_loss(p, xp, w, m) - reference_margin_loss(p, xm, w, m)) / (2 * eps);
        ASSERT_NEAR(dx[k], fd, 2e-6 * std::max(1.0, std::fabs(fd))) << "dx " << k << " shape " << shape;
      }
      for (size_t k = 0; k < w.size(); ++k) {
        std::vector<double> wp = w, wm = w;
        wp[k] += eps;
        wm[k] -= eps;
        const double fd = (reference_margin_loss(p, p.x, wp, m) - reference_margin_loss(p, p.x, wm, m)) / (2 * eps);
        ASSERT_NEAR(dw[k], fd, 2e-6 * std::max(1.0, std::fabs(fd))) << "dw " << k << " shape " << shape;
      }
    }
  }
}

TEST(ClassifierHead, PartialFcAtRatioOneIsTheFullHeadAndSamplesAreRankIndependent) {
  const Problem p = make_problem(4, 40, 6);
  const Outcome full = run_world(p, arcface_spec(), 2);
  const Outcome forced = run_world(p, arcface_spec(), 2, true, 1.0, /*force_sampled=*/true);
  EXPECT_EQ(forced.loss, full.loss);
  EXPECT_EQ(forced.dx, full.dx);
  EXPECT_EQ(forced.dw, full.dw);
  // At 0.3 the loss and gradients are those of the sampled classes, whatever the number of ranks.
  const Outcome one = run_world(p, arcface_spec(), 1, true, 0.3);
  const Outcome three = run_world(p, arcface_spec(), 3, true, 0.3);
  EXPECT_NEAR(three.loss, one.loss, 1e-12);
  expect_near_all(three.dw, one.dw, 1e-12, "dw");
  int64_t untouched = 0;
  for (int64_t c = 0; c < p.classes; ++c) {
    bool zero = true;
    for (int64_t d = 0; d < kDim; ++d) zero = zero && one.dw[static_cast<size_t>(c * kDim + d)] == 0;
    untouched += zero;
    for (int64_t i = 0; i < p.batch; ++i) EXPECT_FALSE(zero && p.labels[i] == c) << "a positive class was not sampled";
  }
  EXPECT_GT(untouched, 0);
  EXPECT_LT(one.loss, full.loss) << "fewer negatives, smaller normaliser";
}

TEST(ClassifierHead, EvaluateCountsTopOneAndTopFiveFromTheCosineLogits) {
  Problem p = make_problem(6, 9, 6);
  ClassifierHead<double> h(options(p, arcface_spec(), false), nullptr);
  // Sample i is its class row itself: the top-1 class of its cosine logits.
  for (int64_t i = 0; i < p.batch; ++i)
    for (int64_t d = 0; d < kDim; ++d) p.x[i * kDim + d] = h.weights()[p.labels[i] * kDim + d] * (1 + i);
  const HeadResult r = h.evaluate(p.x.data(), p.labels.data(), p.batch);
  EXPECT_EQ(r.correct, p.batch);
  EXPECT_EQ(r.correct_top5, p.batch);
  EXPECT_EQ(r.examples, p.batch);
  std::vector<int64_t> bad = p.labels;
  bad[2] = p.classes;
  EXPECT_THROW(h.evaluate(p.x.data(), bad.data(), p.batch), Error);
}

}  // namespace
}  // namespace fastnn::head
