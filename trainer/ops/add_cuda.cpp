// add on CUDA (ops/add.h): one kernel sums all inputs; backward copies dy into every wanted dx. Also the
// one-pass add+relu the fuse_ops rewrite uses for two inputs.
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
    for (size_t i = 0; i < a.inputs.size(); ++i) xs[i] = gpu::ptr<T>(a.inputs[i]);
    gpu::add_forward<T>(a.outputs[0].numel(), std::span<const T* const>(xs, a.inputs.size()),
                         gpu::ptr<T>(a.outputs[0]), gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    for (Tensor& dx : a.d_inputs)
      if (dx.defined() && dx.nbytes() && dx.raw() != a.d_outputs[0].raw())
        CUDA_CHECK(cudaMemcpyAsync(dx.raw(), a.d_outputs[0].raw(), dx.nbytes(), cudaMemcpyDeviceToDevice, s));
  }
};

// relu(a + b) as one layer (the fuse_ops rewrite of a residual add): one pass forward, one backward pass
// writing relu's gradient straight into both inputs' gradients (the composite runs add, relu, relu's
// backward and add's copies, and saves z and dz). Bitwise the composite of the two CUDA kernels.
template <typename T>
class AddReluCuda final : public OpKernel {
 public:
  AddReluCuda(const OpSignature& add, const OpSignature& relu) : OpKernel("add+relu", Device::kCuda) {
    sig_ = add;
    sig_.outputs = relu.outputs;
    sig_.has_backward = add.has_backward && relu.has_backward;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::add_relu_forward<T>(a.outputs[0].numel(), gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.inputs[1]),
                              gpu::ptr<T>(a.outputs[0]), gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    gpu::relu_backward_to_two<T>(a.outputs[0].numel(), gpu::ptr<T>(a.outputs[0]), gpu::ptr<T>(a.d_outputs[0]),
                                  gpu::ptr<T>(a.d_inputs[0]), gpu::ptr<T>(a.d_inputs[1]), gpu::stream_of(a));
  }
};

template <typename T>
std::unique_ptr<OpKernel> fuse_add_relu(const OpKernel& first, const OpKernel& then) {
  if (!dynamic_cast<const AddCuda<T>*>(&first)) return nullptr;
  return std::make_unique<AddReluCuda<T>>(first.signature(), then.signature());
}

}  // namespace

void register_add_cuda(OpRegistry& r) {
  r.add_kernel("add", Device::kCuda, [cpu = gpu::cpu_factory(r, "add")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("add", in);
    return gpu::make_cuda_kernel<AddCuda>(dt, gpu::cuda_signature(cpu, a, in, dt));
  });
  r.add_fusion("add", "relu", Device::kCuda, [](const OpKernel& first, const OpKernel& then) {
    const OpSignature &a = first.signature(), &b = then.signature();
    if (a.inputs.size() != 2 || a.outputs.size() != 1 || b.inputs.size() != 1 || b.outputs.size() != 1 ||
        a.outputs[0].shape != b.inputs[0].shape || a.outputs[0].dtype != b.inputs[0].dtype)
      return std::unique_ptr<OpKernel>();  // other input counts keep the composite
    if (auto k = fuse_add_relu<float>(first, then)) return k;
    if (auto k = fuse_add_relu<__half>(first, then)) return k;
    return fuse_add_relu<__nv_bfloat16>(first, then);
  });
}

}  // namespace fastnn::ops
