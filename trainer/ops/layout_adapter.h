// Runs an NCHW kernel inside an NHWC graph (GraphOptions::layout = kNHWC): the adapter's signature has
// every 4-D input and output in NHWC ([N, H, W, C]); forward transposes the inputs to NCHW, runs the
// kernel, transposes its outputs back; backward does the same with the gradients. Transposes are exact,
// so an NHWC graph of adapted kernels is bitwise the NCHW graph — which is how CI runs an "NHWC" graph
// on the CPU, with the CPU oracle kept NCHW, while the GPU gains kernels that take NHWC themselves
// (issue 13, P4). Other tensors (2-D activations, params, state) pass through untouched.
//
// Saved: the kernel's own, then NCHW copies of the 4-D inputs and outputs (its backward reads them).
// CPU kernels only (the transposes are host loops); f32 and f64. Not accumulates_input_grads.
#pragma once

#include <memory>

#include "trainer/ops/op.h"

namespace fastnn::ops {

// [N, C, H, W] -> [N, H, W, C]; other ranks unchanged.
Shape nhwc_shape(const Shape& nchw);

std::unique_ptr<OpKernel> adapt_to_nhwc(std::unique_ptr<OpKernel> nchw_kernel);

}  // namespace fastnn::ops
