// concat on CUDA (ops/concat.h): one strided 2-D copy per input each way (no kernel of its own). NHWC
// (add_nhwc_kernel) is the same copy over [N*H*W, C_i] rows: the channel axis is the last one.
#include <vector>

#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/concat.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace {

template <typename T>
class ConcatCuda final : public OpKernel {
 public:
  explicit ConcatCuda(OpSignature sig) : OpKernel("concat", Device::kCuda) {
    sig_ = std::move(sig);
    const Shape& y = sig_.outputs[0].shape;
    const bool rows = y.size() == 4 && sig_.activation_layout == Layout::kNHWC;  // [N*H*W, C]
    const size_t axis = rows ? 3 : 1;
    inner_ = y.size() == 4 && !rows ? y[2] * y[3] : 1;
    total_ = y[axis];
    n_ = rows ? y[0] * y[1] * y[2] : y[0];
    for (const TensorSpec& t : sig_.inputs) channels_.push_back(t.shape[axis]);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    T* y = gpu::ptr<T>(a.outputs[0]);
    int64_t off = 0;
    for (size_t i = 0; i < channels_.size(); ++i) {
      const int64_t len = channels_[i] * inner_;
      CUDA_CHECK(cudaMemcpy2DAsync(y + off, bytes(total_ * inner_), gpu::ptr<T>(a.inputs[i]), bytes(len), bytes(len),
                                   static_cast<size_t>(n_), cudaMemcpyDeviceToDevice, s));
      off += len;
    }
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    const T* dy = gpu::ptr<T>(a.d_outputs[0]);
    int64_t off = 0;
    for (size_t i = 0; i < channels_.size(); ++i) {
      const int64_t len = channels_[i] * inner_;
      if (a.d_inputs[i].defined())
        CUDA_CHECK(cudaMemcpy2DAsync(gpu::ptr<T>(a.d_inputs[i]), bytes(len), dy + off, bytes(total_ * inner_),
                                     bytes(len), static_cast<size_t>(n_), cudaMemcpyDeviceToDevice, s));
      off += len;
    }
  }

 private:
  static size_t bytes(int64_t elems) { return static_cast<size_t>(elems) * sizeof(T); }
  std::vector<int64_t> channels_;
  int64_t inner_ = 1, total_ = 0, n_ = 0;
};

}  // namespace

void register_concat_cuda(OpRegistry& r) {
  r.add_kernel("concat", Device::kCuda, [cpu = gpu::cpu_factory(r, "concat")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("concat", in);
    return gpu::make_cuda_kernel<ConcatCuda>(dt, gpu::cuda_signature(cpu, a, in, dt));
  });
  r.add_nhwc_kernel("concat", Device::kCuda,
                    [cpu = gpu::cpu_factory(r, "concat")](const Attrs& a, std::span<const TensorSpec> in) {
                      const DType dt = gpu::cuda_compute_dtype("concat", in);
                      return gpu::make_cuda_kernel<ConcatCuda>(dt, nhwc_signature(gpu::cuda_signature(cpu, a, in, dt)));
                    });
}

}  // namespace fastnn::ops
