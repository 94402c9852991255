// The GPU data-parallel path (trainer/loop/nccl_collectives.h) in a world of one process on one GPU:
// NCCL averages and broadcasts f32/f16/bf16 device buffers in place (a world of one: bitwise unchanged,
// every element rewritten by NCCL's copy), and a CUDA step runner whose gradients go through the
// collectives trains bitwise like one without them (both with deterministic cuDNN algorithms: with the
// default ones two identical runners already differ by ~1e-5 after 4 steps, seen on an H100), calling
// the average (in buckets issued during backward) over exactly the parameters each step; and every
// bucket goes out only after the backward pass has written its gradients. Multi-rank runs need several GPUs (docs/DISTRIBUTED.md, scripts/gpu/scaling.sh).
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
#include "trainer/runner/step_runner.h"
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
class CountingCollectives final : public runner::DeviceCollectives {
 public:
  explicit CountingCollectives(runner::DeviceCollectives& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  void average_async(std::span<const Buffer> b, void* s) override {
    ++averages;
    for (const Buffer& x : b) averaged_elements += static_cast<int64_t>(x.count);
    inner_.average_async(b, s);
  }
  void wait(void* s) override { inner_.wait(s); }
  void broadcast(std::span<const Buffer> b, int root, void* s) override {
    ++broadcasts;
    inner_.broadcast(b, root, s);
  }
  int averages = 0, broadcasts = 0;
  int64_t averaged_elements = 0;

 private:
  runner::DeviceCollectives& inner_;
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
    std::vector<runner::DeviceCollectives::Buffer> b = {{d.raw(), 1000, dt}};
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
  runner::StepRunnerOptions o;
  o.target = {.device = Device::kCuda, .dtype = DType::kF32, .device_index = 0};
  o.batch_size = 8;
  o.seed = 5;
  o.deterministic = true;
  o.weight_decay = 1e-4;
  o.optimizer = optimizer_options(load_job_config("", std::vector<std::string>{"--optimizer=momentum"}));
  auto plain = runner::make_step_runner(net, o);
  o.collectives = &counting;
  auto dp = runner::make_step_runner(net, o);
  dp->broadcast_variables();
  EXPECT_EQ(counting.broadcasts, 1);
  int64_t param_elements = 0;
  for (const graph::NamedTensor& p : dp->graph().parameters()) param_elements += p.value.numel();
  for (int s = 0; s < 4; ++s) {
    auto [x, y] = runner::random_host_batch(plain->graph(), 40 + static_cast<uint64_t>(s));
    const StepResult a = plain->train(x, y, static_cast<uint64_t>(s), 0.05f);
    const StepResult b = dp->train(x, y, static_cast<uint64_t>(s), 0.05f);
    EXPECT_EQ(a.loss, b.loss) << "step " << s;
  }
  EXPECT_GE(counting.averages, 4);  // a bucket (25 MiB) or more per step
  EXPECT_EQ(counting.averaged_elements, 4 * param_elements);
  const auto va = plain->host_variables(), vb = dp->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
}

// A world of two ranks holding the same gradients, simulated on one GPU: the average is the identity,
// and each call copies its buffers on the stream it was given. A bucket issued before the backward pass
// had written its gradients would copy the previous step's values, so the copies must equal the
// gradients the step ends with (no weight decay, scaling or clipping: the update leaves them as they are).
class SnapshotCollectives final : public runner::DeviceCollectives {
 public:
  ~SnapshotCollectives() override {
    for (Snapshot& s : snaps) cudaFree(s.copy);
  }
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void average_async(std::span<const Buffer> buffers, void* stream) override {
    ++calls;
    for (const Buffer& b : buffers) {
      Snapshot s{b, nullptr, b.count * dtype_size(b.dtype)};
      CUDA_CHECK(cudaMalloc(&s.copy, s.bytes));  // synchronous: usable on any stream
      CUDA_CHECK(cudaMemcpyAsync(s.copy, b.data, s.bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
      snaps.push_back(s);
    }
  }
  void wait(void* stream) override { CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }
  void broadcast(std::span<const Buffer>, int, void*) override {}

  struct Snapshot {
    Buffer buffer;
    void* copy;
    size_t bytes;
  };
  std::vector<Snapshot> snaps;
  int calls = 0;
};

TEST(NcclGpu, GradientBucketsGoOutDuringBackwardAfterTheirGradientsAreWritten) {
  REQUIRE_GPU_AND_NCCL();
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  SnapshotCollectives snap;
  runner::StepRunnerOptions o;
  o.target = {.device = Device::kCuda, .dtype = DType::kF32, .device_index = 0};
  o.batch_size = 8;
  o.seed = 5;
  o.optimizer = optimizer_options(load_job_config("", std::vector<std::string>{"--optimizer=momentum"}));
  o.collectives = &snap;
  // 0.5 MiB buckets cut LeNet's gradients (backward order) into 3: fc4 + fc3's biases, fc3's 12.8 MB of
  // weights alone (a parameter larger than a bucket is a bucket of its own), then the convolutions.
  o.allreduce_bucket_mb = 0.5;
  auto runner = runner::make_step_runner(net, o);
  const auto params = static_cast<int64_t>(runner->graph().parameters().size());
  for (int s = 0; s < 2; ++s) {
    snap.snaps.clear();
    snap.calls = 0;
    auto [x, y] = runner::random_host_batch(runner->graph(), 70 + static_cast<uint64_t>(s));
    runner->train(x, y, static_cast<uint64_t>(s), 0.05f);
    runner->synchronize();
    EXPECT_EQ(snap.calls, 3) << "step " << s;
    ASSERT_EQ(static_cast<int64_t>(snap.snaps.size()), params);
    for (const SnapshotCollectives::Snapshot& sn : snap.snaps) {
      std::vector<unsigned char> a(sn.bytes), b(sn.bytes);
      CUDA_CHECK(cudaMemcpy(a.data(), sn.copy, sn.bytes, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(b.data(), sn.buffer.data, sn.bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(a, b) << "step " << s << ": a bucket was averaged before its gradients were final";
    }
  }
}

}  // namespace
}  // namespace fastnn::loop

#endif
