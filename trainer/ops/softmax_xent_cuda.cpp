// softmax_xent on CUDA (ops/softmax_xent.h): one warp per row, the batch mean summed in a fixed
// order. A label outside [0, K) makes its row NaN and, when cuda::Policy::check_labels is on (the
// default), throws Error after the kernel (synchronising the stream), or, under
// Policy::defer_label_checks (the step runner's), from cuda::raise_label_errors() after the step.
// Workspace: N doubles (row losses) + the flag.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/softmax_xent.h"

namespace fastnn::ops {
namespace {

template <typename T>
class SoftmaxXentCuda final : public OpKernel {
 public:
  SoftmaxXentCuda(OpSignature sig, const SoftmaxXentParams& p) : OpKernel("softmax_xent", Device::kCuda), p_(p) {
    sig_ = std::move(sig);
    rows_bytes_ = gpu::align256(gpu::softmax_xent_workspace_bytes(p));
    sig_.workspace_bytes = rows_bytes_ + 256;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    char* ws = gpu::ptr<char>(a.workspace);
    int* flag = reinterpret_cast<int*>(ws + rows_bytes_);
    gpu::reset_flag(flag, s);
    const T* z = gpu::ptr<T>(a.inputs[0]);
    T *loss = gpu::ptr<T>(a.outputs[0]), *probs = gpu::ptr<T>(a.saved[0]);
    if (a.inputs[1].dtype() == DType::kI32)
      gpu::softmax_xent_forward<T, int32_t>(p_, z, gpu::ptr<int32_t>(a.inputs[1]), loss, probs, ws, flag, s);
    else
      gpu::softmax_xent_forward<T, int64_t>(p_, z, gpu::ptr<int64_t>(a.inputs[1]), loss, probs, ws, flag, s);
    gpu::check_label_flag("softmax_xent", flag, p_.k, s);
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    const cudaStream_t s = gpu::stream_of(a);
    const T *probs = gpu::ptr<T>(a.saved[0]), *dloss = gpu::ptr<T>(a.d_outputs[0]);
    T* dz = gpu::ptr<T>(a.d_inputs[0]);
    if (a.inputs[1].dtype() == DType::kI32)
      gpu::softmax_xent_backward<T, int32_t>(p_, probs, gpu::ptr<int32_t>(a.inputs[1]), dloss, dz, s);
    else
      gpu::softmax_xent_backward<T, int64_t>(p_, probs, gpu::ptr<int64_t>(a.inputs[1]), dloss, dz, s);
  }

 private:
  SoftmaxXentParams p_;
  size_t rows_bytes_ = 0;
};

}  // namespace

void register_softmax_xent_cuda(OpRegistry& r) {
  r.add_kernel("softmax_xent", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "softmax_xent")](const Attrs& a, std::span<const TensorSpec> in) {
                 // The kernels have no class weights yet: refused rather than silently unweighted.
                 if (a.has("class_weights"))
                   throw ConfigError("softmax_xent: class_weights are supported on the CPU only");
                 const DType dt = gpu::cuda_compute_dtype("softmax_xent", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 const SoftmaxXentParams p{in[0].shape[0], in[0].shape[1],
                                           a.get_float("softmax_xent", "label_smoothing", 0.0)};
                 return gpu::make_cuda_kernel<SoftmaxXentCuda>(dt, std::move(sig), p);
               });
}

}  // namespace fastnn::ops
