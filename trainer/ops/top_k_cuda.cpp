// top_k on CUDA (ops/top_k.h): one warp per row counts the logits strictly above the label's (ties
// count as correct); an integer atomic adds the rows up, so the count is exact. A bad label throws
// Error when cuda::Policy::check_labels is on (synchronising the stream). Workspace: the flag.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/top_k.h"

namespace fastnn::ops {
namespace {

template <typename T>
class TopKCuda final : public OpKernel {
 public:
  TopKCuda(OpSignature sig, int64_t k) : OpKernel("top_k", Device::kCuda), k_(k) {
    sig_ = std::move(sig);
    sig_.workspace_bytes = 256;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    int* flag = gpu::ptr<int>(a.workspace);
    gpu::reset_flag(flag, s);
    const Tensor& z = a.inputs[0];
    const Tensor& l = a.inputs[1];
    int64_t* out = gpu::ptr<int64_t>(a.outputs[0]);
    if (l.dtype() == DType::kI32)
      gpu::top_k_count<T, int32_t>(z.dim(0), z.dim(1), k_, gpu::ptr<T>(z), gpu::ptr<int32_t>(l), out, flag, s);
    else
      gpu::top_k_count<T, int64_t>(z.dim(0), z.dim(1), k_, gpu::ptr<T>(z), gpu::ptr<int64_t>(l), out, flag, s);
    gpu::check_label_flag("top_k", flag, z.dim(1), s);
  }

 private:
  int64_t k_;
};

}  // namespace

void register_top_k_cuda(OpRegistry& r) {
  r.add_kernel("top_k", Device::kCuda, [cpu = gpu::cpu_factory(r, "top_k")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("top_k", in);
    OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
    return gpu::make_cuda_kernel<TopKCuda>(dt, std::move(sig), a.get_int("top_k", "k", 1));
  });
}

}  // namespace fastnn::ops
