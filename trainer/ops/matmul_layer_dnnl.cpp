// A layer that is one matrix product, y [M, K] = x [M, C] * w^T + b with the user's weight w [K, C], as
// three oneDNN matrix products on the tensors as they are:
//   forward          y [M, K]  = x [M, C] * w^T (+ the bias [K], added by the primitive)
//   backward-data    dx [M, C] = dy [M, K] * w
//   backward-weights dw [K, C] = dy^T * x; the bias gradient db [K] = dy's column sums (double, as the
//                    reference's)
// Two layers are such products:
// - conv2d's NHWC CPU kernel for a pointwise convolution (1x1 window, stride 1, no padding, one group, no
//   bias), M = N*H*W rows, w the user's [K, C, 1, 1]. Why not Conv2dDnnl: oneDNN's direct convolutions want
//   the weight in a blocked format of their own, so each pass reorders a copy in (and the filter gradient
//   back out); the matmul primitive packs its operand blocks itself, in cache, and reads and writes the
//   user's layout. In a ResNet-50 training step (batch 8, 224², AVX-512) the 1x1 layers' reorders were
//   about 20 of the step's 33 ms of reorders, and the products beat the direct kernels in all three passes
//   (docs/PERFORMANCE.md, "CPU training"). Inference plans fold a convolution into the batch norm after it
//   (ConvBatchNormFold), so in predict and serve this kernel runs only for a pointwise convolution with no
//   batch norm after it; it then packs the weight on every call where Conv2dDnnl would keep its copy.
// - fully_connected's CPU kernel under precision=bf16 (register_bf16_fully_connected_dnnl), M = N, x
//   flattened; in f32 fully_connected keeps its OpenBLAS kernel.
//
// The filter gradient in f32 on a CPU without AVX-512, at 1,024 to 8,192 rows and at least 128 channels
// in and out (ResNet-50's 1x1 layers at 14x14 and 28x28, batch 8), is OpenBLAS's instead: one
// single-threaded product per chunk of output channels, a chunk per thread. oneDNN 2.6's matmul with the
// transposed dy took 1.5-2x as long there (zen3, 2 threads: [1568, 1024] x 256 channels 11.3 against
// 6.2-6.5 ms, [1568, 256] x 1024 14.0 against 6.2-6.8, [6272, 512] x 128 9.5 against 6.4), but was faster
// at 25,088 rows (56x56: 8.4 against 12.0); MobileNet v2's 12x12 layers (64 or 96 channels on one side)
// stepped 0.92-1.04x on OpenBLAS, so they stay on oneDNN. Not measured on AVX-512.
//
// bf16 (as Conv2dDnnl's): each product's two operands are rounded to bfloat16 first (x into a saved tensor
// for the filter gradient, dy once for both backward products and the bias gradient), the products
// accumulate in f32 and write f32.
//
// Not bitwise the reference (another summation order, FMA): ops_nhwc_cpu_test and ops_bf16_cpu_test hold
// it to the reference within f32 rounding (bf16: to the reference on the rounded tensors). At a fixed thread
// count the same inputs give the same bits.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "trainer/ops/blas_core.h"
#include "trainer/ops/conv2d_dnnl.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/fully_connected.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/op_spec_checks.h"
#include "trainer/ops/part_marks.h"

namespace fastnn::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using namespace dnnl_conv;

// The product's sizes, and the pass names the step profile shows (part_marks.h).
struct Product {
  memory::dim m = 0, c = 0, k = 0;
  bool bias = false;
  const char* fprop = "";
  const char* dgrad = "";
  const char* wgrad = "";
};

class MatmulLayer final : public OpKernel {
 public:
  // `sig`: the op's signature (its inputs, parameters and output); a bf16 layer adds its saved input.
  MatmulLayer(const char* op, const Product& p, OpSignature sig, bool bf16)
      : OpKernel(op, Device::kCpu), p_(p), bf16_(bf16) {
    const memory::dim m = p.m, c = p.c, k = p.k;
    const auto f32 = memory::data_type::f32;
    const auto in = bf16 ? memory::data_type::bf16 : f32;  // what the products multiply
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::engine& eng = dnnl_cpu_engine();
    auto product = [&](memory::desc a, memory::desc b, memory::desc out, memory::desc bias = {}) {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, out), attr, eng);
    };
    const memory::desc bias = p.bias ? memory::desc({1, k}, f32, Tag::ab) : memory::desc();
    fwd_pd_ = product(memory::desc({m, c}, in, Tag::ab), memory::desc({c, k}, in, Tag::ba), memory::desc({m, k}, f32, Tag::ab), bias);
    bwd_data_pd_ = product(memory::desc({m, k}, in, Tag::ab), memory::desc({k, c}, in, Tag::ab), memory::desc({m, c}, f32, Tag::ab));
    bwd_w_pd_ = product(memory::desc({k, m}, in, Tag::ba), memory::desc({m, c}, in, Tag::ab), memory::desc({k, c}, f32, Tag::ab));
    size_t rounded = 0;  // bf16: [dy][w] rounded, before the scratchpad; x in the last saved tensor
    if (bf16) {
      x_to_bf16_ = Bf16Rounding({m, c}, Tag::ab);
      dy_to_bf16_ = Bf16Rounding({m, k}, Tag::ab);
      w_to_bf16_ = Bf16Rounding({k, c}, Tag::ab);
      w_offset_ = dy_to_bf16_.bytes();
      rounded = w_offset_ + w_to_bf16_.bytes();
    }
    scratch_offset_ = rounded;
    blas_filter_gradient_ = !bf16 && !cpu::this_cpu_features().avx512 && m >= 1024 && m <= 8192 && std::min(c, k) >= 128;
    sig_ = std::move(sig);
    if (bf16) save_input_in_bf16(sig_);
    sig_.workspace_bytes = rounded + dnnl_aligned(std::max({fwd_pd_.scratchpad_desc().get_size(),
                                                            bwd_data_pd_.scratchpad_desc().get_size(),
                                                            bwd_w_pd_.scratchpad_desc().get_size()}));
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const PartMark part(p_.fprop);
    if (!fwd_) fwd_ = dnnl::matmul(fwd_pd_);
    std::byte* ws = bytes_of(a.workspace);
    const std::byte* x = bf16_ ? operand(x_to_bf16_, a.inputs[0], bytes_of(a.saved.back())) : bytes_of(a.inputs[0]);
    run(*fwd_, fwd_pd_, x, operand(w_to_bf16_, a.params[0], ws + w_offset_), a.outputs[0], ws,
        p_.bias ? bytes_of(a.params[1]) : nullptr);
  }

  void run_backward(const BackwardArgs& a) override {
    const bool want_dx = a.d_inputs[0].defined(), want_dw = a.d_params[0].defined();
    const bool want_db = p_.bias && a.d_params[1].defined();
    if (!want_dx && !want_dw && !want_db) return;
    std::byte* ws = bytes_of(a.workspace);
    const std::byte* dy = operand(dy_to_bf16_, a.d_outputs[0], ws);
    if (want_dx) {
      const PartMark part(p_.dgrad);
      if (!bwd_data_) bwd_data_ = dnnl::matmul(bwd_data_pd_);
      run(*bwd_data_, bwd_data_pd_, dy, operand(w_to_bf16_, a.params[0], ws + w_offset_), a.d_inputs[0], ws);
    }
    if (!want_dw && !want_db) return;
    const PartMark part(p_.wgrad);
    if (want_dw && blas_filter_gradient_) {
      blas_filter_gradient(a.d_outputs[0].data<float>(), a.inputs[0].data<float>(), a.d_params[0].data<float>());
    } else if (want_dw) {
      if (!bwd_w_) bwd_w_ = dnnl::matmul(bwd_w_pd_);
      run(*bwd_w_, bwd_w_pd_, dy, bf16_ ? bytes_of(a.saved.back()) : bytes_of(a.inputs[0]), a.d_params[0], ws);
    }
    // db [K]: the sums of dy's [M, K] columns, from dy as the products took it (bf16: rounded).
    if (want_db) column_sums_in_double(p_.m, p_.k, [&](int64_t i) { return element(dy, i); }, a.d_params[1].data<float>());
  }

 private:
  // An operand as the products take it: the tensor's own memory, or (bf16) rounded at `at`.
  const std::byte* operand(const Bf16Rounding& rounding, const Tensor& t, std::byte* at) const {
    if (!bf16_) return bytes_of(t);
    rounding(t, at);
    return at;
  }
  // out = a * b (+ bias) with each operand's layout from the primitive's description.
  void run(const dnnl::matmul& mm, const dnnl::matmul::primitive_desc& pd, const std::byte* a, const std::byte* b,
           const Tensor& out, std::byte* ws, const std::byte* bias = nullptr) const {
    const dnnl::engine& eng = dnnl_cpu_engine();
    auto at = [](const std::byte* p) { return const_cast<std::byte*>(p); };
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), eng, at(a))},
                                               {DNNL_ARG_WEIGHTS, dnnl::memory(pd.weights_desc(), eng, at(b))},
                                               {DNNL_ARG_DST, user_memory(pd.dst_desc(), out)},
                                               {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), eng, ws + scratch_offset_)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(pd.bias_desc(), eng, at(bias)));
    dnnl_execute(mm, args);
  }
  // dw [K, C] = dy^T x on OpenBLAS (the file comment), the output channels split between the threads.
  void blas_filter_gradient(const float* dy, const float* x, float* dw) const {
    cpu::use_single_threaded_blas();
    const int64_t chunks = cpu::parallel_slots((p_.k + 15) / 16), per = (p_.k + chunks - 1) / chunks;
    tbb::parallel_for(int64_t{0}, chunks, [&](int64_t j) {
      const int64_t k0 = j * per, rows = std::min(per, p_.k - k0);
      if (rows > 0) cpu::gemm(true, false, rows, p_.c, p_.m, 1.0f, dy + k0, p_.k, x, p_.c, 0.0f, dw + k0 * p_.c, p_.c);
    });
  }
  float element(const std::byte* v, memory::dim i) const {
    if (!bf16_) return reinterpret_cast<const float*>(v)[i];
    const uint32_t bits = uint32_t{reinterpret_cast<const uint16_t*>(v)[i]} << 16;
    return std::bit_cast<float>(bits);
  }

  Product p_;
  bool bf16_;
  dnnl::matmul::primitive_desc fwd_pd_, bwd_data_pd_, bwd_w_pd_;
  // Made at a pass's first run, as Conv2dDnnl's: an inference graph never generates the backward ones.
  std::optional<dnnl::matmul> fwd_, bwd_data_, bwd_w_;
  Bf16Rounding x_to_bf16_, dy_to_bf16_, w_to_bf16_;  // bf16 only
  size_t w_offset_ = 0, scratch_offset_ = 0;  // dy at the workspace's start
  bool blas_filter_gradient_ = false;          // the file comment
};

}  // namespace

namespace dnnl_conv {
bool is_pointwise_product(const Conv2dParams& p) {
  const Window2d& g = p.win;
  return p.groups == 1 && !p.bias && g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_bottom == 0 && g.pad_left == 0 && g.pad_right == 0;
}

std::unique_ptr<OpKernel> make_conv1x1_matmul(const Conv2dParams& p, const OpSignature& nchw_sig, bool bf16) {
  const Product product{.m = p.n * p.h * p.w, .c = p.c, .k = p.k, .bias = false,
                        .fprop = "conv2d fprop", .dgrad = "conv2d dgrad", .wgrad = "conv2d wgrad"};
  return std::make_unique<MatmulLayer>("conv2d", product, nhwc_signature(nchw_sig), bf16);
}
}  // namespace dnnl_conv

void register_bf16_fully_connected_dnnl(OpRegistry& r) {
  r.add_kernel("fully_connected", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    const FullyConnectedParams p = fully_connected_params(a, in);
    if (!use_dnnl_kernels() || compute_dtype("fully_connected", in) != DType::kF32)
      throw ConfigError("fully_connected: the bf16 kernels take f32 tensors on the fast CPU kernels");
    const Product product{.m = p.n, .c = p.d, .k = p.units, .bias = p.bias,
                          .fprop = "fully_connected fprop", .dgrad = "fully_connected dgrad", .wgrad = "fully_connected wgrad"};
    return std::make_unique<MatmulLayer>("fully_connected", product, fully_connected_signature(p, in[0].shape, DType::kF32),
                                         /*bf16=*/true);
  });
}

}  // namespace fastnn::ops
