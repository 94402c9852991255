// The GPU data-parallel path (trainer/loop/nccl_collectives.h) in a world of one process on one GPU:
// NCCL averages and broadcasts f32/f16/bf16 device buffers in place (a world of one: bitwise unchanged,
// every element rewritten by NCCL's copy), and a CUDA step runner whose gradients go through the
// collectives trains bitwise like one without them (both with deterministic cuDNN algorithms: with the
// default ones two identical runners already differ by ~1e-5 after 4 steps, seen on an H100), calling
// the average once per step over exactly the parameters. Multi-rank runs need several GPUs (docs/DISTRIBUTED.md, scripts/gpu/scaling.sh).
// Skipped without a CUDA device or NCCL.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(NcclGpu, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <cstring>

#include "trainer/comm/communicator.h"
#include "trainer/config/job_config.h"
#include "trainer/cuda/runtime.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/loop/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {
namespace {

bool have_gpu_and_nccl() {
  static const bool ok = [] {
    if (!nccl_built() || !cuda::device_available()) return false;
    cuda::init_backend(0);
    return true;
  }();
  return ok;
}

#define REQUIRE_GPU_AND_NCCL() \
  if (!have_gpu_and_nccl()) GTEST_SKIP() << "no CUDA device or no NCCL"

// Counts the calls and the elements that pass through, then delegates.
class CountingCollectives final : public DeviceCollectives {
 public:
  explicit CountingCollectives(DeviceCollectives& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  void average(std::span<const Buffer> b, void* s) override {
    ++averages;
    for (const Buffer& x : b) averaged_elements += static_cast<int64_t>(x.count);
    inner_.average(b, s);
  }
  void broadcast(std::span<const Buffer> b, int root, void* s) override {
    ++broadcasts;
    inner_.broadcast(b, root, s);
  }
  int averages = 0, broadcasts = 0;
  int64_t averaged_elements = 0;

 private:
  DeviceCollectives& inner_;
};

TEST(NcclGpu, WorldOfOneAverageAndBroadcastKeepEveryDtypeBitwise) {
  REQUIRE_GPU_AND_NCCL();
  LocalCommunicator host;
  auto nccl = make_nccl_collectives(host, 30.0);
  EXPECT_EQ(nccl->world_size(), 1);
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    Tensor h = Tensor::empty({1000}, DType::kF32);
    for (int i = 0; i < 1000; ++i) h.data<float>()[i] = 0.37f * static_cast<float>(i) - 91.5f;
    const Tensor want = h.to(dt);
    Tensor d = cuda::to_device(want);
    std::vector<DeviceCollectives::Buffer> b = {{d.raw(), 1000, dt}};
    nccl->average(b, cuda::current_stream());
    nccl->broadcast(b, 0, cuda::current_stream());
    const Tensor got = cuda::to_host(d);
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << dtype_name(dt);
  }
}

TEST(NcclGpu, RunnerWithNcclTrainsBitwiseLikeWithout) {
  REQUIRE_GPU_AND_NCCL();
  LocalCommunicator host;
  auto nccl = make_nccl_collectives(host, 30.0);
  CountingCollectives counting(*nccl);
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  StepRunnerOptions o;
  o.target = {.device = Device::kCuda, .dtype = DType::kF32, .device_index = 0};
  o.batch_size = 8;
  o.seed = 5;
  o.deterministic = true;
  o.weight_decay = 1e-4;
  o.optimizer = optimizer_options(load_job_config("", std::vector<std::string>{"--optimizer=momentum"}));
  auto plain = make_step_runner(net, o);
  o.collectives = &counting;
  auto dp = make_step_runner(net, o);
  dp->broadcast_variables();
  EXPECT_EQ(counting.broadcasts, 1);
  int64_t param_elements = 0;
  for (const graph::NamedTensor& p : dp->graph().parameters()) param_elements += p.value.numel();
  for (int s = 0; s < 4; ++s) {
    auto [x, y] = random_host_batch(plain->graph(), 40 + static_cast<uint64_t>(s));
    const StepResult a = plain->train(x, y, static_cast<uint64_t>(s), 0.05f);
    const StepResult b = dp->train(x, y, static_cast<uint64_t>(s), 0.05f);
    EXPECT_EQ(a.loss, b.loss) << "step " << s;
  }
  EXPECT_EQ(counting.averages, 4);
  EXPECT_EQ(counting.averaged_elements, 4 * param_elements);
  const auto va = plain->host_variables(), vb = dp->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
}

}  // namespace
}  // namespace fastnn::loop

#endif
