// Runs an NCHW kernel inside an NHWC graph (GraphOptions::layout = kNHWC): the adapter's signature has
// every 4-D input and output in NHWC ([N, H, W, C]); forward transposes the inputs to NCHW, runs the
// kernel, transposes its outputs back; backward does the same with the gradients. Transposes are exact,
// so an NHWC graph of adapted kernels is bitwise the NCHW graph — which is how CI runs an "NHWC" graph
// on the CPU, with the CPU oracle kept NCHW, while the GPU gains kernels that take NHWC themselves
// (issue 13, P4). Other tensors (2-D activations, params, state) pass through untouched.
//
// Saved: the kernel's own, then NCHW copies of the 4-D inputs and outputs (its backward reads them).
// Any device: host loops on the CPU, ops/cuda_helpers.h's transpose on CUDA (on the args' stream; the
// backward's NCHW gradients are device buffers the adapter allocates once). Not accumulates_input_grads.
//
// Also the vocabulary of NHWC kernels (OpRegistry::add_nhwc_kernel): nhwc_signature() turns an NCHW
// kernel's signature into the NHWC one.
#pragma once

#include <memory>

#include "trainer/ops/op.h"

namespace fastnn::ops {

// [N, C, H, W] -> [N, H, W, C]; other ranks unchanged.
Shape nhwc_shape(const Shape& nchw);

std::unique_ptr<OpKernel> adapt_to_nhwc(std::unique_ptr<OpKernel> nchw_kernel);

// `nchw` with its 4-D inputs and outputs in [N, H, W, C] and activation_layout kNHWC (params, state,
// saved and workspace unchanged).
OpSignature nhwc_signature(OpSignature nchw);

// A host [N, C, H, W] tensor transposed into a new [N, H, W, C] one tagged kNHWC (exact).
Tensor to_nhwc(const Tensor& nchw);


}  // namespace fastnn::ops
