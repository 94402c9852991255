// What the oneDNN convolution kernels (conv2d_nhwc_dnnl.cpp, matmul_layer_dnnl.cpp, conv_bn_fold_dnnl.cpp)
// share: conv2d's and depthwise_conv2d's parameters as one grouped convolution, its oneDNN descriptors on
// NHWC activations, the weight plumbing (the user's [K, C/G, R, S] to oneDNN's blocked format) and the
// rounding of f32 tensors to bfloat16 for the bf16 kernels. FASTNN_HAVE_DNNL only.
#pragma once

#ifdef FASTNN_HAVE_DNNL
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "trainer/ops/conv2d.h"
#include "trainer/ops/dnnl_runtime.h"

namespace fastnn::ops::dnnl_conv {

// The op's parameters as a grouped convolution (a depthwise one has a group per input channel, weight
// [C*M, 1, R, S], output channel c*M + m: TF's order), or nullopt where it runs on the reference kernels
// (FASTNN_CPU_KERNELS=reference, or not f32: the gradient checks' f64).
std::optional<Conv2dParams> grouped_conv_params(std::string_view op, const Attrs& attrs, std::span<const TensorSpec> nchw_inputs);

struct ConvDescs {
  dnnl::memory::desc x, y;       // NHWC
  dnnl::memory::desc w_user;     // [K, C/G, R, S]: oihw, or goihw for several groups
  dnnl::memory::desc w_any;      // the format the primitive picks
  dnnl::memory::desc bias;       // [K], or empty without a bias
  dnnl::memory::dims strides, dilation, pad_l, pad_r;
};
ConvDescs conv_descs(const Conv2dParams& p, bool with_bias);

inline std::byte* bytes_of(const Tensor& t) { return static_cast<std::byte*>(const_cast<void*>(t.raw())); }
inline dnnl::memory user_memory(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, dnnl_cpu_engine(), const_cast<void*>(t.raw()));
}
// The reorder from one format to another, made once; none when they are the same.
std::optional<dnnl::reorder> reorder_between(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
void run_reorder(const dnnl::reorder& r, const dnnl::memory& from, const dnnl::memory& to);
// `m` in the format `md`: reordered by `r` into the memory at `at`, or `m` itself where there is no reorder.
dnnl::memory reordered(const std::optional<dnnl::reorder>& r, const dnnl::memory& m, const dnnl::memory::desc& md,
                       std::byte* at);

// The bf16 kernels keep the forward's rounded input for the filter gradient: a saved tensor [N, H, W, C]
// in bf16 (half the input's bytes), appended to the signature's, instead of rounding x twice.
void save_input_in_bf16(OpSignature& nhwc_sig);

// Whether an inference convolution runs faster as oneDNN's Winograd convolution (AVX-512 only; F(2x2,3x3)
// or F(4x4,3x3), on oneDNN's blocked activations) than as the direct one on NHWC, the reorders in and out
// included: a 3x3 window, stride 1, no dilation, one group, at least 32 input and output channels, 4x4
// output tiles at least 70% filled, at least 25 M multiply-adds (conv2d_descs_dnnl.cpp says what was
// measured); and, over a job of `job_images` images (0: unbounded), at least 6,000 output pixels in the
// job (images * P * Q), which repay the weights' one-off transform.
bool winograd_pays_in_inference(const Conv2dParams& p, int64_t job_images = 0);
// The same for a training convolution's three passes; also at least 128 4x4 output tiles in the batch.
bool winograd_pays_in_training(const Conv2dParams& p);
// Where oneDNN has no Winograd convolution (before AVX-512), whether one that winograd_pays_in_inference
// (or, training, winograd_pays_in_training) runs faster as fastnn's own F(4x4, 3x3) (winograd_f43.h):
// a CPU with AVX2 and FMA, and at least 8 4x4 output tiles in the batch.
bool own_winograd_pays(const Conv2dParams& p);
// Whether an inference convolution (a batch norm fold) under precision bf16 runs faster in bf16, its input
// rounded by a pass of its own, than in f32: where it does enough multiply-adds per input element
// (conv2d_descs_dnnl.cpp has the measurements).
bool bf16_pays_in_inference(const Conv2dParams& p);

// A pointwise convolution that runs as plain matrix products (matmul_layer_dnnl.cpp): a 1x1 window,
// stride 1, no padding, one group, no bias.
bool is_pointwise_product(const Conv2dParams& p);
// `bf16`: as Conv2dDnnl's (register_bf16_convolutions_dnnl).
std::unique_ptr<OpKernel> make_conv1x1_matmul(const Conv2dParams& p, const OpSignature& nchw_sig, bool bf16);

// An f32 tensor rounded to bfloat16 (round to nearest even), the same dims and layout, into memory the
// caller gives (a kernel's workspace): the bf16 kernels' inputs. The reorder is made once.
class Bf16Rounding {
 public:
  Bf16Rounding() = default;
  Bf16Rounding(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag);
  size_t bytes() const { return dnnl_aligned(bf16_md_.get_size()); }
  // `t` (f32, of those dims and format) rounded into `at`.
  dnnl::memory operator()(const Tensor& t, std::byte* at) const;
  // The bf16 memory at `at` (rounded before).
  dnnl::memory rounded_at(std::byte* at) const;

 private:
  dnnl::memory::desc f32_md_, bf16_md_;
  std::optional<dnnl::reorder> reorder_;
};

// The bias gradient where the products ran without one (fastnn's Winograd, OpenBLAS): sums[j] = the sum
// over rows r of element(r * cols + j), in double and the reference's order of rows, rounded once.
template <typename Element>
void column_sums_in_double(int64_t rows, int64_t cols, Element element, float* sums) {
  std::vector<double> acc(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) acc[static_cast<size_t>(j)] += element(r * cols + j);
  for (int64_t j = 0; j < cols; ++j) sums[j] = static_cast<float>(acc[static_cast<size_t>(j)]);
}

// A copy of a parameter in a format oneDNN wants, made again only when the parameter was written since
// (its storage's write count moved; valid where ForwardArgs::params_write_counted).
class CachedWeights {
 public:
  // Whether `sources` are the tensors of the last update() with the same write counts.
  bool current(std::span<const Tensor> sources) const;
  // Records `sources` as what the cache now holds; returns the cache's memory of `bytes` bytes.
  std::byte* update(std::span<const Tensor> sources, size_t bytes);
  std::byte* data() const { return static_cast<std::byte*>(buffer_->data()); }

 private:
  std::shared_ptr<Storage> buffer_;
  // Held, so that no other storage can take their addresses.
  std::vector<std::pair<std::shared_ptr<Storage>, uint64_t>> of_;
};

}  // namespace fastnn::ops::dnnl_conv

namespace fastnn::ops {
// The CPU's BatchNormFoldFactory (conv_bn_fold_dnnl.cpp): null where either kernel is not oneDNN's.
std::unique_ptr<OpKernel> make_batch_norm_fold(const BatchNormFold& fold);
}  // namespace fastnn::ops
#endif  // FASTNN_HAVE_DNNL
