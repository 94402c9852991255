#include "trainer/loop/nccl_collectives.h"

#include "core/check.h"

#if defined(FASTNN_HAVE_NCCL)
#include "trainer/comm/nccl_communicator.h"
#include "trainer/head/head_collectives.h"
#endif

namespace fastnn::loop {

#if defined(FASTNN_HAVE_NCCL)
namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kF32: return ncclFloat32;
    case DType::kF16: return ncclFloat16;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI64: return ncclInt64;
    default: throw Error(str("NCCL collectives: dtype ", dtype_name(t), " is not f32, f16, bf16, f64 or i64"));
  }
}

// Also the sharded classifier head's collectives (head_collectives.h), over the same communicator.
class NcclCollectives final : public runner::DeviceCollectives, public head::HeadCollectives {
 public:
  NcclCollectives(Communicator& host, double timeout_seconds) : nccl_(host, timeout_seconds) {}
  int rank() const override { return nccl_.rank(); }
  int world_size() const override { return nccl_.world_size(); }

  void average_async(std::span<const Buffer> buffers, void* stream) override {
    auto s = static_cast<cudaStream_t>(stream);
    nccl_.group_start();
    for (const Buffer& b : buffers) nccl_.allreduce_average(b.data, b.count, nccl_type(b.dtype), s);
    nccl_.group_end();
  }

  void wait(void* stream) override { nccl_.wait(static_cast<cudaStream_t>(stream)); }

  head::HeadCollectives* head_collectives() override { return this; }
  void allgather(const void* send, void* recv, size_t count, DType type, void* stream) override {
    nccl_.allgather(send, recv, count, nccl_type(type), static_cast<cudaStream_t>(stream));
  }
  void allreduce_sum(void* data, size_t count, DType type, void* stream) override {
    nccl_.allreduce_sum(data, count, nccl_type(type), static_cast<cudaStream_t>(stream));
  }
  void allreduce_max(void* data, size_t count, DType type, void* stream) override {
    nccl_.allreduce_max(data, count, nccl_type(type), static_cast<cudaStream_t>(stream));
  }
  void reduce_scatter_sum(const void* send, void* recv, size_t recv_count, DType type, void* stream) override {
    nccl_.reduce_scatter_sum(send, recv, recv_count, nccl_type(type), static_cast<cudaStream_t>(stream));
  }

  void broadcast(std::span<const Buffer> buffers, int root, void* stream) override {
    auto s = static_cast<cudaStream_t>(stream);
    nccl_.group_start();
    for (const Buffer& b : buffers) nccl_.broadcast(b.data, b.count, nccl_type(b.dtype), root, s);
    nccl_.group_end();
    nccl_.wait(s);
  }

 private:
  NcclCommunicator nccl_;
};

}  // namespace

bool nccl_built() { return true; }

std::unique_ptr<runner::DeviceCollectives> make_nccl_collectives(Communicator& host, double timeout_seconds) {
  return std::make_unique<NcclCollectives>(host, timeout_seconds);
}

#else

bool nccl_built() { return false; }

std::unique_ptr<runner::DeviceCollectives> make_nccl_collectives(Communicator&, double) {
  throw ConfigError(
      "the GPU data-parallel path needs NCCL, and this fastnn was built without it (CUDA backend + NCCL + "
      "MPI; docs/DISTRIBUTED.md)");
}

#endif

std::unique_ptr<runner::DeviceCollectives> make_gradient_collectives(const JobConfig& c, DataParallel& dp,
                                                             const runner::ComputeTarget& target) {
  if (target.device != Device::kCuda || (dp.world() == 1 && c.comm_backend() != "nccl")) return nullptr;
  runner::select_device(target);
  return make_nccl_collectives(dp.comm(), c.collective_timeout_seconds());
}

}  // namespace fastnn::loop
