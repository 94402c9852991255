// Running an op on one of its test cases: the plumbing shared by the generic CPU op tests and the
// CUDA-vs-CPU comparisons. Not used on the training path.
//
//   auto specs = case_input_specs(c, DType::kF64);
//   auto k = registry.create(def.name, Device::kCpu, c.attrs, specs);
//   KernelTensors t = allocate_kernel_tensors(k->signature());
//   fill_case_tensors(t, k->signature(), c, /*seed=*/1);
//   k->forward(t.forward_args(c.training));
//
// Fills are deterministic and dtype independent: every value is drawn in double from Philox keyed by
// (seed, tensor role and index, element), then rounded to the tensor's dtype, so an f32 run and an
// f64 run of the same case see the same numbers (up to rounding), and so do CPU and CUDA runs.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/ops/op.h"

namespace fastnn::ops {

struct KernelTensors {
  std::vector<Tensor> inputs, params, state, outputs, saved;
  std::vector<Tensor> d_outputs, d_inputs, d_params;  // d_inputs: undefined where there is no gradient
  Tensor workspace;

  ForwardArgs forward_args(bool training, uint64_t seed = 0, uint64_t step = 0);
  BackwardArgs backward_args(bool training);
};

// The case's input specs with float inputs set to `compute`.
std::vector<TensorSpec> case_input_specs(const OpCase& c, DType compute);

// Every tensor of the signature on `device`, uninitialised; gradients only if `with_grads`.
KernelTensors allocate_kernel_tensors(const OpSignature& sig, Device device = Device::kCpu, bool with_grads = true);

// CPU tensors only. Inputs: uniform [lo, hi) or integers [0, int_high) as the case says. Params and
// state: uniform [-1, 1), or [0.5, 1.5) where the spec's init is kOnes (scales, variances stay
// positive). d_outputs: uniform [-1, 1). Outputs, saved, d_inputs, d_params, workspace: NaN (floats)
// or 0xAB bytes, so a value a kernel forgets to write shows up.
void fill_case_tensors(KernelTensors& t, const OpSignature& sig, const OpCase& c, uint64_t seed);

// Uniform [lo, hi) doubles (CPU f32/f64 tensor) keyed by (seed, stream).
void fill_uniform(Tensor& t, double lo, double hi, uint64_t seed, uint64_t stream);
// Float tensors to NaN, others to 0xAB bytes.
void fill_garbage(Tensor& t);

}  // namespace fastnn::ops
