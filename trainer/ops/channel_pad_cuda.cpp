// channel_pad on CUDA (ops/channel_pad.h): a memset and one strided 2-D copy; backward one 2-D copy.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/channel_pad.h"

namespace fastnn::ops {
namespace {

template <typename T>
class ChannelPadCuda final : public OpKernel {
 public:
  ChannelPadCuda(OpSignature sig, int64_t before, int64_t after) : OpKernel("channel_pad", Device::kCuda), before_(before) {
    sig_ = std::move(sig);
    const Shape& x = sig_.inputs[0].shape;
    n_ = x[0];
    inner_ = 1;
    for (size_t i = 2; i < x.size(); ++i) inner_ *= x[i];
    in_plane_ = x[1] * inner_;
    out_plane_ = (x[1] + before + after) * inner_;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    T* y = gpu::ptr<T>(a.outputs[0]);
    CUDA_CHECK(cudaMemsetAsync(y, 0, a.outputs[0].nbytes(), s));
    CUDA_CHECK(cudaMemcpy2DAsync(y + before_ * inner_, bytes(out_plane_), gpu::ptr<T>(a.inputs[0]), bytes(in_plane_),
                                 bytes(in_plane_), static_cast<size_t>(n_), cudaMemcpyDeviceToDevice, s));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    CUDA_CHECK(cudaMemcpy2DAsync(gpu::ptr<T>(a.d_inputs[0]), bytes(in_plane_),
                                 gpu::ptr<T>(a.d_outputs[0]) + before_ * inner_, bytes(out_plane_), bytes(in_plane_),
                                 static_cast<size_t>(n_), cudaMemcpyDeviceToDevice, gpu::stream_of(a)));
  }

 private:
  static size_t bytes(int64_t elems) { return static_cast<size_t>(elems) * sizeof(T); }
  int64_t before_, n_ = 0, inner_ = 1, in_plane_ = 0, out_plane_ = 0;
};

}  // namespace

void register_channel_pad_cuda(OpRegistry& r) {
  r.add_kernel("channel_pad", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "channel_pad")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("channel_pad", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<ChannelPadCuda>(dt, std::move(sig), a.get_int("channel_pad", "before", 0),
                                                               a.get_int("channel_pad", "after", 0));
               });
}

}  // namespace fastnn::ops
