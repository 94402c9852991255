// A fusion as a composite op: `first` (any op with one output) followed by `then` (an op with one output
// that reads first's output at its input `slot`: relu, a residual add+relu, or a batch norm after a
// convolution), run as one layer. The composite calls the two
// kernels in the unfused order with the same tensors, so on every device it is bitwise the unfused
// pair (tests/unit/trainer/graph_fusion_test.cpp); a device with a truly fused kernel (one pass over
// memory: the GPU speed work) replaces the composite there and is tested against it.
//
// Signature: first's inputs, then then's other inputs (in then's order); first's params, then then's (the
// same for state); then's output;
// saved = first's saved, first's output z,
// then's saved, and dz (the gradient between the two, written by then's backward); workspace the
// larger of the two (with the channel-sums path of op.h: of the two and the sums pass's own, then a
// 256-byte-aligned region of 2 × channels floats for the sums). Backward runs then's backward (dy -> dz and then's other inputs' gradients), then
// first's (dz -> d_inputs, d_params). Errors: ConfigError when `then` is not such an op or the shapes do
// not chain.
#pragma once

#include <memory>

#include "trainer/ops/op.h"

namespace fastnn::ops {

// The registry's one-pass fusion of the two kernels when it has one (OpRegistry::add_fusion: the CUDA
// batch_norm+relu, batch_norm+add+relu), else the composite. A one-pass kernel takes its inputs in the
// composite's order (first's, then then's others).
std::unique_ptr<OpKernel> make_fused_kernel(std::unique_ptr<OpKernel> first, std::unique_ptr<OpKernel> then,
                                            const OpRegistry* registry = nullptr, size_t slot = 0);

// For the devices' one-pass batch norm fusions (their OpRegistry::add_fusion factories).
// batch_norm+relu / +relu6: `then` has one input, reading batch norm's one output (shape and dtype).
bool chains_into_activation(const OpSignature& bn, const OpSignature& activation);
// batch_norm+add+relu: `then` adds two inputs of batch norm's output shape and dtype.
bool chains_into_add_relu(const OpSignature& bn, const OpSignature& add_relu);
// The one-pass layers' signatures: batch norm's (inputs, params, state, saved statistics) with the
// activation's output; for the add, the other addend appended as a second input with a gradient
// (written, not accumulated).
OpSignature fused_activation_signature(const OpSignature& bn, const OpSignature& activation);
OpSignature fused_add_relu_signature(const OpSignature& bn, const OpSignature& add_relu);

}  // namespace fastnn::ops
