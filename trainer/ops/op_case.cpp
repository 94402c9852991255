#include "trainer/ops/op_case.h"

#include <cstring>
#include <limits>

#include "trainer/ops/random.h"

namespace fastnn::ops {

ForwardArgs KernelTensors::forward_args(bool training, uint64_t seed, uint64_t step) {
  ForwardArgs a;
  a.inputs = inputs;
  a.params = params;
  a.state = state;
  a.outputs = outputs;
  a.saved = saved;
  a.workspace = workspace;
  a.training = training;
  a.seed = seed;
  a.step = step;
  return a;
}

BackwardArgs KernelTensors::backward_args(bool training) {
  BackwardArgs a;
  a.inputs = inputs;
  a.params = params;
  a.state = state;
  a.outputs = outputs;
  a.saved = saved;
  a.d_outputs = d_outputs;
  a.d_inputs = d_inputs;
  a.d_params = d_params;
  a.workspace = workspace;
  a.training = training;
  return a;
}

std::vector<TensorSpec> case_input_specs(const OpCase& c, DType compute) {
  std::vector<TensorSpec> v;
  for (const CaseInput& in : c.inputs)
    v.push_back(TensorSpec{.name = {}, .shape = in.shape, .dtype = is_floating(in.dtype) ? compute : in.dtype});
  return v;
}

KernelTensors allocate_kernel_tensors(const OpSignature& sig, Device device, bool with_grads) {
  KernelTensors t;
  auto alloc = [&](const std::vector<TensorSpec>& specs, std::vector<Tensor>& out) {
    for (const TensorSpec& s : specs) out.push_back(Tensor::empty(s.shape, s.dtype, device));
  };
  alloc(sig.inputs, t.inputs);
  alloc(sig.params, t.params);
  alloc(sig.state, t.state);
  alloc(sig.outputs, t.outputs);
  alloc(sig.saved, t.saved);
  if (with_grads && sig.has_backward) {
    alloc(sig.outputs, t.d_outputs);
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      t.d_inputs.push_back(sig.input_has_grad[i] ? Tensor::empty(sig.inputs[i].shape, sig.inputs[i].dtype, device)
                                                 : Tensor());
    alloc(sig.params, t.d_params);
  }
  if (sig.workspace_bytes) t.workspace = Tensor::empty({static_cast<int64_t>(sig.workspace_bytes)}, DType::kU8, device);
  return t;
}

void fill_uniform(Tensor& t, double lo, double hi, uint64_t seed, uint64_t stream) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t ui = static_cast<uint64_t>(i);
    const double u = uniform01_open0(philox_word(seed, stream, 2 * ui), philox_word(seed, stream, 2 * ui + 1));
    const double v = lo + (hi - lo) * (1.0 - u);  // 1 - u is in [0, 1)
    if (t.dtype() == DType::kF32) t.data<float>()[i] = static_cast<float>(v);
    else if (t.dtype() == DType::kF64) t.data<double>()[i] = v;
    else throw Error(str("fill_uniform on ", t.describe()));
  }
}

void fill_garbage(Tensor& t) {
  if (!t.defined()) return;
  if (t.dtype() == DType::kF32 || t.dtype() == DType::kF64) t.fill(std::numeric_limits<double>::quiet_NaN());
  else if (t.nbytes()) std::memset(t.raw(), 0xAB, t.nbytes());
}

void fill_case_tensors(KernelTensors& t, const OpSignature& sig, const OpCase& c, uint64_t seed) {
  FASTNN_CHECK(c.inputs.size() == t.inputs.size(), "case ", c.label, " has ", c.inputs.size(), " inputs, the kernel ",
               t.inputs.size());
  uint64_t stream = 0;
  for (size_t i = 0; i < t.inputs.size(); ++i, ++stream) {
    const CaseInput& in = c.inputs[i];
    Tensor& x = t.inputs[i];
    if (is_floating(x.dtype())) {
      fill_uniform(x, in.lo, in.hi, seed, stream);
    } else {
      FASTNN_CHECK(in.int_high > 0, "case ", c.label, ": integer input ", i, " needs int_high");
      for (int64_t j = 0; j < x.numel(); ++j) {
        const int64_t v = static_cast<int64_t>(philox_word(seed, stream, static_cast<uint64_t>(j)) % in.int_high);
        if (x.dtype() == DType::kI32) x.data<int32_t>()[j] = static_cast<int32_t>(v);
        else if (x.dtype() == DType::kI64) x.data<int64_t>()[j] = v;
        else x.data<uint8_t>()[j] = static_cast<uint8_t>(v);
      }
    }
  }
  auto fill_learned = [&](std::vector<Tensor>& ts, const std::vector<TensorSpec>& specs) {
    for (size_t i = 0; i < ts.size(); ++i, ++stream) {
      if (specs[i].init == Init::kOnes) fill_uniform(ts[i], 0.5, 1.5, seed, 100 + stream);
      else fill_uniform(ts[i], -1.0, 1.0, seed, 100 + stream);
    }
  };
  fill_learned(t.params, sig.params);
  fill_learned(t.state, sig.state);
  for (Tensor& d : t.d_outputs)
    if (is_floating(d.dtype())) fill_uniform(d, -1.0, 1.0, seed, 200 + stream++);
  for (auto* group : {&t.outputs, &t.saved, &t.d_inputs, &t.d_params})
    for (Tensor& x : *group) fill_garbage(x);
  fill_garbage(t.workspace);
}

}  // namespace fastnn::ops
