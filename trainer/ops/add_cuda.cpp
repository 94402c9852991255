// add on CUDA (ops/add.h): one kernel sums all inputs; backward copies dy into every wanted dx.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/add.h"

namespace fastnn::ops {
namespace {

constexpr size_t kMaxInputs = 16;

template <typename T>
class AddCuda final : public OpKernel {
 public:
  explicit AddCuda(OpSignature sig) : OpKernel("add", Device::kCuda) { sig_ = std::move(sig); }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* xs[kMaxInputs];
    for (size_t i = 0; i < a.inputs.size(); ++i) xs[i] = cuda::ptr<T>(a.inputs[i]);
    cuda::add_forward<T>(a.outputs[0].numel(), std::span<const T* const>(xs, a.inputs.size()),
                         cuda::ptr<T>(a.outputs[0]), cuda::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = cuda::stream_of(a);
    for (Tensor& dx : a.d_inputs)
      if (dx.defined() && dx.nbytes() && dx.raw() != a.d_outputs[0].raw())
        CUDA_CHECK(cudaMemcpyAsync(dx.raw(), a.d_outputs[0].raw(), dx.nbytes(), cudaMemcpyDeviceToDevice, s));
  }
};

}  // namespace

void register_add_cuda(OpRegistry& r) {
  r.add_kernel("add", Device::kCuda, [cpu = cuda::cpu_factory(r, "add")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = cuda::cuda_compute_dtype("add", in);
    return cuda::make_cuda_kernel<AddCuda>(dt, cuda::cuda_signature(cpu, a, in, dt));
  });
}

}  // namespace fastnn::ops
