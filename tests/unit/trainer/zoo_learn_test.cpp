// The zoo's TF-slim ImageNet nets learn: a few Adam steps on one small batch of real
// Fashion-MNIST images (upscaled to the net's smallest practical input, grey replicated to RGB,
// scaled to [-1, 1] as the inception preset does) bring the training loss well below where it
// started. Each step is a full forward + backward through every layer, so a wrong gradient anywhere
// shows up as a loss that does not fall.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainer/graph/graph.h"
#include "trainer/optim/gradient_ops.h"
#include "trainer/optim/optimizers.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

constexpr const char* kDir = "/usr/share/datasets/fashion-mnist/";

// The first n images and labels of the Fashion-MNIST training set; empty when it is not installed.
struct Batch {
  std::vector<uint8_t> pixels;  // n x 28 x 28
  std::vector<int64_t> labels;
};

Batch read_fashion(int n) {
  Batch b;
  gzFile fi = gzopen((std::string(kDir) + "train-images-idx3-ubyte.gz").c_str(), "rb");
  gzFile fl = gzopen((std::string(kDir) + "train-labels-idx1-ubyte.gz").c_str(), "rb");
  if (fi && fl) {
    unsigned char hi[16], hl[8];
    b.pixels.resize(static_cast<size_t>(n) * 784);
    std::vector<uint8_t> lab(static_cast<size_t>(n));
    const bool ok = gzread(fi, hi, 16) == 16 && gzread(fl, hl, 8) == 8 &&
                    gzread(fi, b.pixels.data(), static_cast<unsigned>(b.pixels.size())) ==
                        static_cast<int>(b.pixels.size()) &&
                    gzread(fl, lab.data(), static_cast<unsigned>(n)) == n;
    if (ok) b.labels.assign(lab.begin(), lab.end());
    else b.pixels.clear();
  }
  if (fi) gzclose(fi);
  if (fl) gzclose(fl);
  return b;
}

// [n, 3, size, size] by nearest-neighbour upscaling, values in [-1, 1].
Tensor images_at(const Batch& b, int size) {
  const int n = static_cast<int>(b.labels.size());
  Tensor t = Tensor::empty({n, 3, size, size}, DType::kF32);
  float* p = t.data<float>();
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < size; ++y)
        for (int x = 0; x < size; ++x) {
          const uint8_t v = b.pixels[static_cast<size_t>(i * 784 + (y * 28 / size) * 28 + x * 28 / size)];
          *p++ = v / 127.5f - 1.0f;
        }
  return t;
}

struct LearnCase {
  std::string model;
  int size;
  int steps;
  float lr;
  bool aux = true;  // false: without the auxiliary head (which needs the larger input; zoo_step covers it)
};
void PrintTo(const LearnCase& c, std::ostream* os) { *os << c.model << "@" << c.size; }

class ZooLearn : public testing::TestWithParam<LearnCase> {};

TEST_P(ZooLearn, LossFallsOnARealBatch) {
  const LearnCase& c = GetParam();
  const Batch data = read_fashion(4);
  if (data.labels.empty()) GTEST_SKIP() << kDir << " is not installed (scripts/setup.sh)";
  const int n = static_cast<int>(data.labels.size());
  const Tensor images = images_at(data, c.size);
  const Tensor labels = Tensor::from<int64_t>({n}, std::span<const int64_t>(data.labels));

  graph::Graph g(zoo::build_net(c.model, {.num_classes = 10, .height = c.size, .width = c.size, .aux_logits = c.aux}),
                 {.batch_size = n, .seed = 5});
  TrainStep ts(g);
  const std::vector<ParamRef> refs = g.param_refs();
  // Adam: from TF-slim's initialisations, momentum SGD needs many more steps to settle the 100-200
  // layer nets than a unit test should take (its loss wanders at every learning rate tried).
  auto opt = make_adam(refs, 0.9f, 0.999f, 1e-8f);
  std::vector<double> losses;
  for (int s = 0; s < c.steps; ++s) {
    const StepResult r = ts.train(images, labels, static_cast<uint64_t>(s));
    ASSERT_TRUE(std::isfinite(r.loss)) << "step " << s;
    losses.push_back(r.main_loss);
    clip_by_global_norm(refs, 5.0);
    opt->step(c.lr);
  }
  const double first = losses[0];
  const double last = std::min(losses[losses.size() - 1], losses[losses.size() - 2]);
  std::string curve;
  for (double l : losses) curve += " " + std::to_string(l).substr(0, 5);
  EXPECT_LT(last, 0.5 * first) << c.model << " losses:" << curve;
}

// The smallest practical inputs (docs/MODELS.md) keep a step cheap on two CPU cores. alexnet_v2 and
// overfeat drop half their fc units (keep 0.5), so they get more, gentler steps. The large NASNets
// learn at 40 without their auxiliary heads (which need 67; zoo_step_test runs their forward and
// backward with it). At 24 their last cells see 1x1 maps, each batch norm normalises 4 values per
// channel, and the loss jumped between 10 and 90 whatever the learning rate (1e-5 to 1e-3), so
// whether it ended below half its start depended on OpenBLAS's kernel set: nasnet_large failed under
// the Haswell/Zen kernels (AVX2 CPUs) and passed under SkylakeX. At 40 both nets reach a loss under
// 5 from 46-77 under all three kernel sets, for 25% more time. (nasnet_mobile at 24 does not settle
// in 8 steps: its first losses are ~20; at 67 it does.)
INSTANTIATE_TEST_SUITE_P(
    NewModels, ZooLearn,
    testing::Values(LearnCase{"alexnet_v2", 67, 12, 3e-4f}, LearnCase{"overfeat", 71, 12, 3e-4f},
                    LearnCase{"inception_v1", 32, 8, 1e-3f}, LearnCase{"inception_v2", 32, 8, 1e-3f},
                    LearnCase{"inception_v4", 107, 8, 1e-3f}, LearnCase{"resnet_v1_200", 32, 8, 1e-3f},
                    LearnCase{"resnet_v2_101", 32, 8, 1e-3f}, LearnCase{"resnet_v2_152", 32, 8, 1e-3f},
                    LearnCase{"resnet_v2_200", 32, 8, 1e-3f}, LearnCase{"nasnet_cifar", 16, 8, 1e-3f},
                    LearnCase{"nasnet_mobile", 67, 8, 1e-3f}, LearnCase{"nasnet_large", 40, 8, 1e-3f, false},
                    LearnCase{"pnasnet_mobile", 67, 8, 1e-3f}, LearnCase{"pnasnet_large", 40, 8, 1e-3f, false}),
    [](const testing::TestParamInfo<LearnCase>& i) { return i.param.model; });

}  // namespace
}  // namespace fastnn
