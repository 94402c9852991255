// fully_connected on CUDA (ops/fully_connected.h): three cuBLAS GEMMs (the CPU's, in the same
// row-major form, see cuda/blas.h) plus the bias kernels. f32 runs without TF32 unless the policy
// allows it.
#include "trainer/cuda/blas.h"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/fully_connected.h"

namespace fastnn::ops {
namespace {

template <typename T>
class FullyConnectedCuda final : public OpKernel {
 public:
  FullyConnectedCuda(OpSignature sig, const FullyConnectedParams& p, DType dt)
      : OpKernel("fully_connected", Device::kCuda), p_(p), dt_(dt) {
    sig_ = std::move(sig);
    if (p.bias) sig_.workspace_bytes = gpu::bias_grad_workspace_bytes(p.n, p.units, 1);  // the bias gradient's sums
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    T* y = gpu::ptr<T>(a.outputs[0]);
    // y[N, units] = x[N, D] * W[units, D]^T
    cuda::gemm(s, dt_, false, true, p_.n, p_.units, p_.d, 1.f, a.inputs[0].raw(), p_.d, a.params[0].raw(),
                         p_.d, 0.f, y, p_.units);
    if (p_.bias) gpu::bias_add<T>(p_.n, p_.units, 1, gpu::ptr<T>(a.params[1]), y, s);
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    const void* dy = a.d_outputs[0].raw();
    // dx[N, D] = dy[N, units] * W[units, D]
    if (a.d_inputs[0].defined())
      cuda::gemm(s, dt_, false, false, p_.n, p_.d, p_.units, 1.f, dy, p_.units, a.params[0].raw(), p_.d,
                           0.f, a.d_inputs[0].raw(), p_.d);
    // dW[units, D] = dy^T[units, N] * x[N, D]
    if (a.d_params[0].defined())
      cuda::gemm(s, dt_, true, false, p_.units, p_.d, p_.n, 1.f, dy, p_.units, a.inputs[0].raw(), p_.d,
                           0.f, a.d_params[0].raw(), p_.d);
    if (p_.bias && a.d_params[1].defined())
      gpu::bias_grad<T>(p_.n, p_.units, 1, gpu::ptr<T>(a.d_outputs[0]), gpu::ptr<T>(a.d_params[1]),
                         const_cast<void*>(a.workspace.raw()), s);
  }

 private:
  FullyConnectedParams p_;
  DType dt_;
};

}  // namespace

void register_fully_connected_cuda(OpRegistry& r) {
  r.add_kernel("fully_connected", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "fully_connected")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("fully_connected", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<FullyConnectedCuda>(dt, std::move(sig), fully_connected_params(a, in), dt);
               });
}

}  // namespace fastnn::ops
