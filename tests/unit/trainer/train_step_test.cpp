// TrainStep: the loss FastNN trains (cross-entropy + 0.4 x aux), metrics, and a short deterministic
// training run of LeNet on a separable synthetic dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/optim/gradient_ops.h"
#include "trainer/optim/optimizers.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

using testing_util::net_from_text;

// Logits = fc(data) and aux = another fc(data): tiny enough to check the loss by hand.
constexpr const char* kTwoHeads = R"pb(
  input { channels: 1 height: 1 width: 3 }
  layers { name: "fc" inputs: "data" fully_connected { units: 4 } }
  layers { name: "aux" inputs: "data" fully_connected { units: 4 } }
  logits: "fc"
  aux_logits: "aux"
  aux_loss_weight: 0.4
)pb";

double xent(const std::vector<double>& logits, int64_t label) {
  double m = -1e300, s = 0;
  for (double v : logits) m = std::max(m, v);
  for (double v : logits) s += std::exp(v - m);
  return -(logits[static_cast<size_t>(label)] - m - std::log(s));
}

TEST(TrainStep, LossIsCrossEntropyPlusPointFourAuxAndMetricsCount) {
  graph::Graph g(net_from_text(kTwoHeads), {.batch_size = 3, .dtype = DType::kF64, .seed = 2});
  const Tensor x = testing_util::random_tensor({3, 1, 1, 3}, DType::kF64, 4);
  const Tensor labels = testing_util::labels_of({0, 3, 2});
  TrainStep ts(g);
  const StepResult r = ts.train(x, labels, 0);
  const auto logits = g.output(0).to_vector<double>(), aux = g.output(1).to_vector<double>();
  double main = 0, auxl = 0;
  int64_t top1 = 0;
  for (int n = 0; n < 3; ++n) {
    const std::vector<double> row(logits.begin() + 4 * n, logits.begin() + 4 * n + 4);
    const std::vector<double> arow(aux.begin() + 4 * n, aux.begin() + 4 * n + 4);
    const int64_t label = labels.to_vector<int64_t>()[static_cast<size_t>(n)];
    main += xent(row, label) / 3;
    auxl += xent(arow, label) / 3;
    top1 += std::max_element(row.begin(), row.end()) - row.begin() == label;
  }
  EXPECT_NEAR(r.main_loss, main, 1e-12);
  EXPECT_NEAR(r.aux_loss, auxl, 1e-12);
  EXPECT_NEAR(r.loss, main + 0.4 * auxl, 1e-12);
  EXPECT_EQ(r.correct, top1);
  EXPECT_EQ(r.correct_top5, 3);  // 4 classes: top-min(5, 4) always hits
  EXPECT_EQ(r.examples, 3);

  // The aux head's weight gradient is 0.4 x the plain cross-entropy gradient: (p - onehot) x / N.
  const auto probs = [&](int n) {
    std::vector<double> p(aux.begin() + 4 * n, aux.begin() + 4 * n + 4);
    const double m = *std::max_element(p.begin(), p.end());
    double s = 0;
    for (double& v : p) s += (v = std::exp(v - m));
    for (double& v : p) v /= s;
    return p;
  };
  const auto xs = x.to_vector<double>();
  for (const graph::NamedTensor& p : g.parameters()) {
    if (p.name != "aux/weights") continue;
    const auto grad = p.grad.to_vector<double>();
    for (int k = 0; k < 4; ++k)
      for (int d = 0; d < 3; ++d) {
        double want = 0;
        for (int n = 0; n < 3; ++n) {
          const double onehot = labels.to_vector<int64_t>()[static_cast<size_t>(n)] == k;
          want += (probs(n)[static_cast<size_t>(k)] - onehot) * xs[static_cast<size_t>(3 * n + d)] / 3;
        }
        EXPECT_NEAR(grad[static_cast<size_t>(4 * 0 + 3 * k + d)], 0.4 * want, 1e-12) << k << "," << d;
      }
  }

  // evaluate(): the main head only.
  const StepResult e = ts.evaluate(x, labels);
  EXPECT_NEAR(e.loss, main, 1e-12);
  EXPECT_EQ(e.aux_loss, 0);
}

// queue_train() + results_from(a host copy of results_block()) is train() with the read-back left to the
// caller: the same losses (aux included), counts and gradients.
TEST(TrainStep, QueuedStepDecodesToTrainsResult) {
  const NetDef net = net_from_text(kTwoHeads);
  graph::Graph a(net, {.batch_size = 3, .dtype = DType::kF64, .seed = 2}), b(net, {.batch_size = 3, .dtype = DType::kF64, .seed = 2});
  const Tensor x = testing_util::random_tensor({3, 1, 1, 3}, DType::kF64, 4);
  const Tensor labels = testing_util::labels_of({1, 3, 2});
  TrainStep ta(a), tb(b);
  EXPECT_THROW(tb.results_block(), Error);  // no step yet
  const StepResult want = ta.train(x, labels, 0);
  tb.queue_train(x, labels, 0);
  Tensor copy = Tensor::empty(tb.results_block().shape(), DType::kU8);
  std::memcpy(copy.raw(), tb.results_block().raw(), copy.nbytes());
  const StepResult got = tb.results_from(copy);
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.main_loss, want.main_loss);
  EXPECT_EQ(got.aux_loss, want.aux_loss);
  EXPECT_GT(got.aux_loss, 0);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_EQ(got.correct_top5, want.correct_top5);
  EXPECT_EQ(got.examples, 3);
  for (size_t i = 0; i < a.parameters().size(); ++i)
    EXPECT_EQ(a.parameters()[i].grad.to_vector<double>(), b.parameters()[i].grad.to_vector<double>()) << i;
  EXPECT_THROW(tb.results_from(Tensor::empty({8}, DType::kU8)), Error);  // not the block's size
}

// Mixup / CutMix labels: the loss is timm's soft-target cross-entropy with mixup_target's targets
// t_n = w_n * q(y_n) + (1 - w_n) * q(y_{N-1-n}), q(y) = (1 - eps) onehot(y) + eps / K, on both heads
// (aux weighted 0.4), and every gradient is that loss's: (p - t) x / N for a head's weights, computed
// here by hand. One weight for all (timm's batch mode) and one per sample (its pair and elem modes);
// weight 1 is the plain step, 0 the plain step on the reversed labels.
TEST(TrainStep, MixedLabelsGiveTimmsSoftTargetLossAndGradient) {
  const NetDef net = net_from_text(kTwoHeads);
  const Tensor x = testing_util::random_tensor({3, 1, 1, 3}, DType::kF64, 4);
  const std::vector<int64_t> y = {0, 3, 2};
  const double eps = 0.1, lambda = 0.3;
  graph::Graph g(net, {.batch_size = 3, .dtype = DType::kF64, .seed = 2});
  TrainStep ts(g, {.label_smoothing = eps});
  for (const std::vector<double>& w : {std::vector<double>{lambda, lambda, lambda}, std::vector<double>{0.3, 0.8, 0.55}}) {
    SCOPED_TRACE(w[1]);
    graph::Graph gm(net, {.batch_size = 3, .dtype = DType::kF64, .seed = 2});
    TrainStep tm(gm, {.label_smoothing = eps});
    if (w[0] == w[1]) tm.set_label_mix(w[0]);
    else tm.set_label_mix(std::span<const double>(w));
    const StepResult r = tm.train(x, Tensor::from<int64_t>({3}, std::span<const int64_t>(y)), 0);
    const auto xs = x.to_vector<double>();
    double want_loss[2] = {0, 0};
    for (size_t o = 0; o < 2; ++o) {
      const auto logits = gm.output(o).to_vector<double>();
      std::vector<double> want_grad(12, 0);  // [4 units, 3 inputs]
      for (int n = 0; n < 3; ++n) {
        std::vector<double> p(logits.begin() + 4 * n, logits.begin() + 4 * n + 4);
        const double m = *std::max_element(p.begin(), p.end());
        double sum = 0;
        for (double& v : p) sum += (v = std::exp(v - m));
        for (double& v : p) v /= sum;
        const double wn = w[size_t(n)];
        for (int k = 0; k < 4; ++k) {
          const double t = wn * ((1 - eps) * (y[size_t(n)] == k) + eps / 4) +
                           (1 - wn) * ((1 - eps) * (y[size_t(2 - n)] == k) + eps / 4);
          want_loss[o] -= t * std::log(p[size_t(k)]) / 3;
          for (int d = 0; d < 3; ++d) want_grad[size_t(3 * k + d)] += (p[size_t(k)] - t) * xs[size_t(3 * n + d)] / 3;
        }
      }
      for (const graph::NamedTensor& prm : gm.parameters()) {
        if (prm.name != (o == 0 ? "fc/weights" : "aux/weights")) continue;
        const auto grad = prm.grad.to_vector<double>();
        for (size_t i = 0; i < 12; ++i) EXPECT_NEAR(grad[i], (o == 0 ? 1.0 : 0.4) * want_grad[i], 1e-12) << o << " " << i;
      }
    }
    EXPECT_NEAR(r.main_loss, want_loss[0], 1e-12);
    EXPECT_NEAR(r.aux_loss, want_loss[1], 1e-12);
    EXPECT_NEAR(r.loss, want_loss[0] + 0.4 * want_loss[1], 1e-12);
  }

  // The ends: lambda 1 is the plain step, lambda 0 the plain step on the partners' labels.
  auto step = [&](double mix, const std::vector<int64_t>& labels) {
    graph::Graph h(net, {.batch_size = 3, .dtype = DType::kF64, .seed = 2});
    TrainStep t(h, {.label_smoothing = eps});
    t.set_label_mix(mix);
    const StepResult s = t.train(x, Tensor::from<int64_t>({3}, std::span<const int64_t>(labels)), 0);
    return std::pair{s.loss, h.parameters()[0].grad.to_vector<double>()};
  };
  EXPECT_EQ(step(1, y), step(1, y));
  const auto plain_reversed = step(1, {2, 3, 0});
  const auto all_partner = step(0, y);
  EXPECT_NEAR(all_partner.first, plain_reversed.first, 1e-12);
  for (size_t i = 0; i < plain_reversed.second.size(); ++i)
    EXPECT_NEAR(all_partner.second[i], plain_reversed.second[i], 1e-12);
  EXPECT_THROW(ts.set_label_mix(1.5), Error);
  const std::vector<double> two = {0.5, 0.2}, out_of_range = {0.5, 1.2, 0.1};
  EXPECT_THROW(ts.set_label_mix(std::span<const double>(two)), Error);  // not one per sample
  EXPECT_THROW(ts.set_label_mix(std::span<const double>(out_of_range)), Error);
}

// With class weights, per-sample label weights keep each label set's normalisation: the loss is
// sum_n w_n c[y_n] (-log p_n,y_n) / sum_n c[y_n] + sum_n (1 - w_n) c[y'_n] (-log p_n,y'_n) / sum_n c[y'_n]
// (y' the reversed labels), each part as the plain weighted loss of its labels divides it.
TEST(TrainStep, PerSampleLabelWeightsKeepTheClassWeightedNormalisation) {
  const NetDef net = net_from_text(kTwoHeads);
  const Tensor x = testing_util::random_tensor({3, 1, 1, 3}, DType::kF64, 4);
  const std::vector<int64_t> y = {0, 3, 2}, partner = {2, 3, 0};
  const std::vector<double> c = {1.0, 2.0, 0.5, 3.0}, w = {0.3, 0.8, 0.55};
  graph::Graph g(net, {.batch_size = 3, .dtype = DType::kF64, .seed = 2});
  TrainStep ts(g, {.class_weights = c});
  ts.set_label_mix(std::span<const double>(w));
  const StepResult r = ts.train(x, Tensor::from<int64_t>({3}, std::span<const int64_t>(y)), 0);
  const auto logits = g.output(0).to_vector<double>();
  double own = 0, other = 0, own_w = 0, other_w = 0;
  for (int n = 0; n < 3; ++n) {
    std::vector<double> z(logits.begin() + 4 * n, logits.begin() + 4 * n + 4);
    const double m = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (double v : z) sum += std::exp(v - m);
    auto nll = [&](int64_t k) { return -(z[size_t(k)] - m - std::log(sum)); };
    own += w[size_t(n)] * c[size_t(y[size_t(n)])] * nll(y[size_t(n)]);
    other += (1 - w[size_t(n)]) * c[size_t(partner[size_t(n)])] * nll(partner[size_t(n)]);
    own_w += c[size_t(y[size_t(n)])];
    other_w += c[size_t(partner[size_t(n)])];
  }
  EXPECT_NEAR(r.main_loss, own / own_w + other / other_w, 1e-12);
}

TEST(TrainStep, RejectsBadLabelsAndFollowsTheBatchSize) {
  graph::Graph g(net_from_text(kTwoHeads), {.batch_size = 2, .seed = 2});
  TrainStep ts(g);
  const Tensor x = testing_util::random_tensor({2, 1, 1, 3}, DType::kF32, 4);
  EXPECT_THROW(ts.train(x, testing_util::labels_of({0, 4}), 0), Error);   // out of range
  EXPECT_THROW(ts.train(x, testing_util::labels_of({0, 1, 2}), 0), Error);  // wrong count
  EXPECT_THROW(ts.train(x, Tensor::from<float>({2}, {0.f, 1.f}), 0), Error);
  EXPECT_NO_THROW(ts.train(x, Tensor::from<int32_t>({2}, {3, 1}), 0));
  g.set_batch_size(1);
  const Tensor x1 = testing_util::random_tensor({1, 1, 1, 3}, DType::kF32, 4);
  EXPECT_EQ(ts.evaluate(x1, testing_util::labels_of({2})).examples, 1);
  EXPECT_THROW(TrainStep(g, {.label_smoothing = 1.0}), ConfigError);
}

// A separable 4-class problem: class k has a bright 8x8 square in quadrant k over faint noise.
struct Synthetic {
  std::vector<Tensor> images, labels;
};

Synthetic make_dataset(int batches, int batch) {
  Synthetic d;
  int example = 0;
  for (int b = 0; b < batches; ++b) {
    Tensor img = testing_util::random_tensor({batch, 1, 28, 28}, DType::kF32, 100 + static_cast<uint64_t>(b), 0.0, 0.3);
    std::vector<int64_t> lab;
    float* p = img.data<float>();
    for (int n = 0; n < batch; ++n, ++example) {
      const int k = (example * 7 + example / 4) % 4;
      lab.push_back(k);
      const int r0 = 3 + 14 * (k / 2), c0 = 3 + 14 * (k % 2);
      for (int r = r0; r < r0 + 8; ++r)
        for (int c = c0; c < c0 + 8; ++c) p[(n * 28 + r) * 28 + c] += 1.0f;
    }
    d.images.push_back(img);
    d.labels.push_back(Tensor::from<int64_t>({batch}, std::span<const int64_t>(lab)));
  }
  return d;
}

std::vector<double> train_lenet(const Synthetic& data, int steps) {
  graph::Graph g(zoo::build_net("lenet", {.num_classes = 4}), {.batch_size = 8, .seed = 11});
  TrainStep ts(g);
  const std::vector<ParamRef> refs = g.param_refs();
  auto opt = make_momentum(refs, 0.9f, false);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    const size_t b = static_cast<size_t>(s) % data.images.size();
    losses.push_back(ts.train(data.images[b], data.labels[b], static_cast<uint64_t>(s)).loss);
    add_weight_decay(refs, 1e-4);
    clip_by_global_norm(refs, 5.0);
    opt->step(0.01f);
  }
  // Held-out check in eval mode: a fresh batch of the same distribution.
  const Synthetic test = make_dataset(1, 8);
  const StepResult e = ts.evaluate(test.images[0], test.labels[0]);
  losses.push_back(e.accuracy());
  return losses;
}

TEST(TrainStep, LeNetLearnsASeparableSyntheticSetDeterministically) {
  const Synthetic data = make_dataset(4, 8);
  const std::vector<double> a = train_lenet(data, 40);
  const double first = (a[0] + a[1] + a[2] + a[3]) / 4, last = (a[36] + a[37] + a[38] + a[39]) / 4;
  // TF-slim's LeNet init (truncated normal 0.1 everywhere) starts well above ln(4) on [0, 1.3] inputs.
  EXPECT_GT(first, std::log(4.0));
  EXPECT_LT(last, 0.2 * first) << "first " << first << " last " << last;
  EXPECT_GE(a.back(), 0.99) << "held-out accuracy";
  // Same seed, same data: the same loss curve, bit for bit.
  const std::vector<double> b = train_lenet(data, 40);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace fastnn
