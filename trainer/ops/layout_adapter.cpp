#include "trainer/ops/layout_adapter.h"

#include <cstring>
#include <vector>

#include "core/check.h"
#ifdef FASTNN_HAVE_CUDA
#include "trainer/cuda/runtime.h"
#include "trainer/ops/cuda_helpers.h"
#endif

namespace fastnn::ops {
namespace {

bool is4(const Shape& s) { return s.size() == 4; }

// dst = src transposed between [N, C, H, W] (nchw) and [N, H, W, C], element by element (exact); on
// the device, ordered on `stream`.
void transpose(const Tensor& src, Tensor& dst, bool to_nhwc, void* stream) {
  const Shape& s = to_nhwc ? src.shape() : dst.shape();  // the NCHW side
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  const size_t e = dtype_size(src.dtype());
  if (src.device() != Device::kCpu) {
#ifdef FASTNN_HAVE_CUDA
    gpu::transpose_last2(n, to_nhwc ? c : hw, to_nhwc ? hw : c, e, src.raw(), dst.raw(),
                          cuda::stream_or_current(stream));
    return;
#else
    throw Error(str("layout adapter: a ", device_name(src.device()), " tensor in a build without that device"));
#endif
  }
  const char* in = static_cast<const char*>(src.raw());
  char* out = static_cast<char*>(dst.raw());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < hw; ++i) {
        const int64_t nchw = (b * c + ch) * hw + i, nhwc = (b * hw + i) * c + ch;
        std::memcpy(out + e * static_cast<size_t>(to_nhwc ? nhwc : nchw),
                    in + e * static_cast<size_t>(to_nhwc ? nchw : nhwc), e);
      }
}

TensorSpec renamed_as(TensorSpec s, const std::string& prefix) {
  s.name = prefix + s.name;
  return s;
}

class NhwcAdapter final : public OpKernel {
 public:
  explicit NhwcAdapter(std::unique_ptr<OpKernel> inner) : OpKernel(inner->name(), inner->device()), inner_(std::move(inner)) {
    const OpSignature& in = inner_->signature();
    sig_ = nhwc_signature(in);
    for (const TensorSpec& t : in.inputs)
      if (is4(t.shape)) sig_.saved.push_back(renamed_as(t, "nchw_"));
    for (const TensorSpec& t : in.outputs)
      if (is4(t.shape)) sig_.saved.push_back(renamed_as(t, "nchw_out_"));
    sig_.accumulates_input_grads = false;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const OpSignature& in = inner_->signature();
    std::vector<Tensor> inputs, outputs;
    size_t slot = in.saved.size();
    for (size_t i = 0; i < a.inputs.size(); ++i) {
      if (!is4(in.inputs[i].shape)) {
        inputs.push_back(a.inputs[i]);
        continue;
      }
      Tensor& nchw = a.saved[slot++];
      transpose(a.inputs[i], nchw, false, a.stream);
      inputs.push_back(nchw);
    }
    for (size_t i = 0; i < a.outputs.size(); ++i) outputs.push_back(is4(in.outputs[i].shape) ? a.saved[slot++] : a.outputs[i]);
    ForwardArgs f = a;
    f.inputs = inputs;
    f.outputs = outputs;
    f.saved = a.saved.subspan(0, in.saved.size());
    inner_->forward(f);
    for (size_t i = 0; i < a.outputs.size(); ++i)
      if (is4(in.outputs[i].shape)) transpose(outputs[i], a.outputs[i], true, a.stream);
  }

  void run_backward(const BackwardArgs& a) override {
    const OpSignature& in = inner_->signature();
    std::vector<Tensor> inputs, outputs, d_outputs, d_inputs;
    size_t slot = in.saved.size();
    for (size_t i = 0; i < a.inputs.size(); ++i) inputs.push_back(is4(in.inputs[i].shape) ? a.saved[slot++] : a.inputs[i]);
    for (size_t i = 0; i < a.outputs.size(); ++i) outputs.push_back(is4(in.outputs[i].shape) ? a.saved[slot++] : a.outputs[i]);
    temps_.resize(a.d_outputs.size() + a.d_inputs.size());
    size_t t = 0;
    auto temp = [&](const TensorSpec& spec) -> Tensor& {
      Tensor& x = temps_[t++];
      if (!x.defined() || x.shape() != spec.shape || x.dtype() != spec.dtype)
        x = Tensor::empty(spec.shape, spec.dtype, device());  // once: the shapes do not change
      return x;
    };
    for (size_t i = 0; i < a.d_outputs.size(); ++i) {
      if (!is4(in.outputs[i].shape)) {
        d_outputs.push_back(a.d_outputs[i]);
        continue;
      }
      Tensor& g = temp(in.outputs[i]);
      transpose(a.d_outputs[i], g, false, a.stream);
      d_outputs.push_back(g);
    }
    for (size_t i = 0; i < a.d_inputs.size(); ++i)
      d_inputs.push_back(!a.d_inputs[i].defined() || !is4(in.inputs[i].shape) ? a.d_inputs[i] : temp(in.inputs[i]));
    BackwardArgs b = a;
    b.inputs = inputs;
    b.outputs = outputs;
    b.d_outputs = d_outputs;
    b.d_inputs = d_inputs;
    b.saved = a.saved.subspan(0, in.saved.size());
    b.accumulate = 0;
    inner_->backward(b);
    for (size_t i = 0; i < a.d_inputs.size(); ++i)
      if (a.d_inputs[i].defined() && is4(in.inputs[i].shape)) transpose(d_inputs[i], a.d_inputs[i], true, a.stream);
  }

 private:
  std::unique_ptr<OpKernel> inner_;
  std::vector<Tensor> temps_;  // NCHW gradients of the backward
};

}  // namespace

Shape nhwc_shape(const Shape& s) { return is4(s) ? Shape{s[0], s[2], s[3], s[1]} : s; }

OpSignature nhwc_signature(OpSignature nchw) {
  for (TensorSpec& t : nchw.inputs) t.shape = nhwc_shape(t.shape);
  for (TensorSpec& t : nchw.outputs) t.shape = nhwc_shape(t.shape);
  nchw.activation_layout = Layout::kNHWC;
  return nchw;
}

Tensor to_nhwc(const Tensor& nchw) {
  FASTNN_CHECK(nchw.device() == Device::kCpu && is4(nchw.shape()), "to_nhwc: ", nchw.describe());
  Tensor out = Tensor::empty(nhwc_shape(nchw.shape()), nchw.dtype(), Device::kCpu, Layout::kNHWC);
  transpose(nchw, out, true, nullptr);
  return out;
}

std::unique_ptr<OpKernel> adapt_to_nhwc(std::unique_ptr<OpKernel> nchw_kernel) {
  FASTNN_CHECK(nchw_kernel, "adapt_to_nhwc: null kernel");
  return std::make_unique<NhwcAdapter>(std::move(nchw_kernel));
}

}  // namespace fastnn::ops
