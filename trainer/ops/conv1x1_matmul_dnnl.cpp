// conv2d's NHWC CPU kernel for a pointwise convolution (1x1 window, stride 1, no padding, one group, no
// bias) as three oneDNN matrix products on the tensors as they are, M = N*H*W rows:
//   forward          y [M, K]  = x [M, C] * w^T      (w: the user's [K, C, 1, 1] read as [K, C])
//   backward-data    dx [M, C] = dy [M, K] * w
//   backward-weights dw [K, C] = dy^T * x
// Why not Conv2dDnnl: oneDNN's direct convolutions want the weight in a blocked format of their own, so
// each pass reorders a copy in (and the filter gradient back out); the matmul primitive packs its operand
// blocks itself, in cache, and reads and writes the user's layout. In a ResNet-50 training step (batch 8,
// 224², AVX-512) the 1x1 layers' reorders were about 20 of the step's 33 ms of reorders, and the products
// beat the direct kernels in all three passes (docs/PERFORMANCE.md, "CPU training").
//
// Inference plans fold a convolution into the batch norm after it (ConvBatchNormFold), so in predict
// and serve this kernel runs only for a pointwise convolution with no batch norm after it; it then packs
// the weight on every call where Conv2dDnnl would keep its reordered copy.
//
// Not bitwise the reference (another summation order, FMA): ops_nhwc_cpu_test holds it to the reference
// within f32 rounding. At a fixed thread count the same inputs give the same bits.
#include <algorithm>

#include "trainer/ops/conv2d_dnnl.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/part_marks.h"

namespace fastnn::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using namespace dnnl_conv;

class Conv1x1Matmul final : public OpKernel {
 public:
  Conv1x1Matmul(const Conv2dParams& p, const OpSignature& nchw_sig) : OpKernel("conv2d", Device::kCpu) {
    const memory::dim m = p.n * p.h * p.w, c = p.c, k = p.k;
    const auto f32 = memory::data_type::f32;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::engine& eng = dnnl_cpu_engine();
    auto product = [&](memory::desc a, memory::desc b, memory::desc out) {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, out), attr, eng);
    };
    const memory::desc x({m, c}, f32, Tag::ab), y({m, k}, f32, Tag::ab), w({k, c}, f32, Tag::ab);
    fwd_pd_ = product(x, memory::desc({c, k}, f32, Tag::ba), y);
    bwd_data_pd_ = product(y, w, x);
    bwd_w_pd_ = product(memory::desc({k, m}, f32, Tag::ba), x, w);
    sig_ = nhwc_signature(nchw_sig);
    sig_.workspace_bytes = dnnl_aligned(std::max({fwd_pd_.scratchpad_desc().get_size(),
                                                  bwd_data_pd_.scratchpad_desc().get_size(),
                                                  bwd_w_pd_.scratchpad_desc().get_size()}));
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const PartMark part("conv2d fprop");
    if (!fwd_) fwd_ = dnnl::matmul(fwd_pd_);
    run(*fwd_, fwd_pd_, a.inputs[0], a.params[0], a.outputs[0], a.workspace);
  }

  void run_backward(const BackwardArgs& a) override {
    if (a.d_inputs[0].defined()) {
      const PartMark part("conv2d dgrad");
      if (!bwd_data_) bwd_data_ = dnnl::matmul(bwd_data_pd_);
      run(*bwd_data_, bwd_data_pd_, a.d_outputs[0], a.params[0], a.d_inputs[0], a.workspace);
    }
    if (a.d_params[0].defined()) {
      const PartMark part("conv2d wgrad");
      if (!bwd_w_) bwd_w_ = dnnl::matmul(bwd_w_pd_);
      run(*bwd_w_, bwd_w_pd_, a.d_outputs[0], a.inputs[0], a.d_params[0], a.workspace);
    }
  }

 private:
  // out = a * b with each operand's layout from the primitive's description.
  static void run(const dnnl::matmul& mm, const dnnl::matmul::primitive_desc& pd, const Tensor& a, const Tensor& b,
                  const Tensor& out, const Tensor& workspace) {
    dnnl_execute(mm, {{DNNL_ARG_SRC, user_memory(pd.src_desc(), a)},
                      {DNNL_ARG_WEIGHTS, user_memory(pd.weights_desc(), b)},
                      {DNNL_ARG_DST, user_memory(pd.dst_desc(), out)},
                      {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), dnnl_cpu_engine(), bytes_of(workspace))}});
  }

  dnnl::matmul::primitive_desc fwd_pd_, bwd_data_pd_, bwd_w_pd_;
  // Made at a pass's first run, as Conv2dDnnl's: an inference graph never generates the backward ones.
  std::optional<dnnl::matmul> fwd_, bwd_data_, bwd_w_;
};

}  // namespace

namespace dnnl_conv {
bool is_pointwise_product(const Conv2dParams& p) {
  const Window2d& g = p.win;
  return p.groups == 1 && !p.bias && g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_bottom == 0 && g.pad_left == 0 && g.pad_right == 0;
}

std::unique_ptr<OpKernel> make_conv1x1_matmul(const Conv2dParams& p, const OpSignature& nchw_sig) {
  return std::make_unique<Conv1x1Matmul>(p, nchw_sig);
}
}  // namespace dnnl_conv

}  // namespace fastnn::ops
