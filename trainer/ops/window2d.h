// Sliding-window geometry shared by conv2d and the 2-D pools.
//
// Attributes (values are [h, w] lists or one int for both):
//   kernel    required
//   stride    default: 1 for convolution, the kernel size for pools
//   dilation  convolution only, default 1
//   padding   "valid" (none, the default), "same", or ints: [p] (all sides), [ph, pw] (top=bottom=ph,
//             left=right=pw), [top, bottom, left, right].
// "same" is TensorFlow's: out = ceil(in / stride), total padding max((out-1)*stride + eff - in, 0)
// where eff = (kernel-1)*dilation + 1, and the odd pixel goes to the bottom / right.
// Output size: out = (in + pad_before + pad_after - eff) / stride + 1 (floor), which must be >= 1.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "trainer/ops/op.h"

namespace fastnn::ops {

struct Window2d {
  int64_t r = 1, s = 1;  // kernel height, width
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t p = 0, q = 0;  // output height, width

  std::string to_string() const;
};

// The part of output pixel (op, oq)'s window inside an h x w input: rows [hb, he), columns [wb, we).
struct WindowSpan {
  int64_t hb = 0, he = 0, wb = 0, we = 0;
  bool empty() const { return hb >= he || wb >= we; }
};
inline WindowSpan window_span(const Window2d& g, int64_t h, int64_t w, int64_t op, int64_t oq) {
  const int64_t h0 = op * g.stride_h - g.pad_top, w0 = oq * g.stride_w - g.pad_left;
  return {h0 > 0 ? h0 : 0, h0 + g.r < h ? h0 + g.r : h, w0 > 0 ? w0 : 0, w0 + g.s < w ? w0 + g.s : w};
}

// Parses the attributes above for an h x w input; throws ConfigError on nonsense (non-positive kernel
// or stride, negative padding, an empty output). Pools (with_dilation false) also require every pad to
// be smaller than the kernel so that no window lies entirely in the padding.
Window2d parse_window2d(std::string_view op, const Attrs& a, int64_t h, int64_t w, bool with_dilation,
                        bool stride_defaults_to_kernel);

// max_pool2d / avg_pool2d: x [N, C, H, W] -> y [N, C, P, Q].
struct Pool2dParams {
  int64_t n = 0, c = 0, h = 0, w = 0;
  Window2d win;
  bool count_include_pad = false;  // avg_pool2d only
  // CUDA only: x and y are [N, H, W, C] / [N, P, Q, C] (the kernels add_nhwc_kernel registers); the CPU
  // kernels are NCHW and pool2d_params never sets it.
  bool nhwc = false;
};
// Attributes: kernel, stride (default: kernel), padding, and for avg pool count_include_pad.
Pool2dParams pool2d_params(std::string_view op, const Attrs& a, std::span<const TensorSpec> inputs, bool is_avg);
OpSignature pool2d_signature(const Pool2dParams& p, DType dtype);

}  // namespace fastnn::ops
