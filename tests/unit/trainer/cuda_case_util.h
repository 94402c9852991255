// For the gpu-labelled op tests (CUDA builds only): a kernel's tensors on the device from a CPU case's
// host tensors, garbage (NaN) where the kernel must write, and the comparison with the CPU oracle's
// results within a dtype's tolerance (ops_cuda_gpu_test, ops_nhwc_cuda_gpu_test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "trainer/cuda/runtime.h"
#include "trainer/graph/net_plan.h"
#include "trainer/ops/op.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {

// The op registry with every builtin op (each registers its CUDA kernel itself in a CUDA build).
inline const OpRegistry& registry() { return graph::builtin_op_registry(); }

// A host tensor of `spec` full of NaN (floats) or 0xAB bytes, copied to the device.
inline Tensor device_garbage(const TensorSpec& spec) {
  Tensor h = Tensor::empty(spec.shape, spec.dtype);
  if (is_floating(spec.dtype)) h.fill(std::numeric_limits<double>::quiet_NaN());
  else if (h.nbytes()) std::memset(h.raw(), 0xAB, h.nbytes());
  return cuda::to_device(h);
}

inline Tensor as_dtype(const Tensor& t, DType dt) { return is_floating(t.dtype()) ? t.to(dt) : t; }

// `sig` with its floating tensors in f32: host tensors for a device kernel of another dtype are made
// and filled in f32 (fill_case_tensors fills f32/f64), then uploaded in the kernel's dtypes.
inline OpSignature as_f32(OpSignature sig) {
  for (auto* group : {&sig.inputs, &sig.params, &sig.state, &sig.outputs, &sig.saved})
    for (TensorSpec& t : *group)
      if (is_floating(t.dtype)) t.dtype = DType::kF32;
  return sig;
}

struct Tolerance {
  double rel, abs;  // |got - want| <= rel * |want| + abs * max(1, max |want|)
};
inline Tolerance tolerance(DType dt) {
  if (dt == DType::kF32) return {1e-4, 1e-5};
  if (dt == DType::kF16) return {1e-2, 1e-2};
  return {5e-2, 5e-2};
}

inline void expect_close(const Tensor& dev, const Tensor& ref, DType dt, const std::string& what) {
  ASSERT_EQ(dev.defined(), ref.defined()) << what;
  if (!dev.defined()) return;
  const Tensor got = cuda::to_host(dev);
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  if (!is_floating(ref.dtype())) {
    ASSERT_EQ(got.dtype(), ref.dtype()) << what;
    EXPECT_EQ(0, std::memcmp(got.raw(), ref.raw(), ref.nbytes())) << what << ": integer tensors differ";
    return;
  }
  const auto a = got.to_vector<double>(), b = ref.to_vector<double>();
  double scale = 1;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  const Tolerance tol = tolerance(dt);
  int failures = 0;
  for (size_t i = 0; i < a.size() && failures < 5; ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) {
      continue;  // the reference left it unwritten too (drop_path's saved scale in eval) or computed NaN
    } else if (std::isnan(a[i])) {
      ADD_FAILURE() << what << "[" << i << "] not written (NaN), want " << b[i];
      ++failures;
    } else if (std::fabs(a[i] - b[i]) > tol.rel * std::fabs(b[i]) + tol.abs * scale) {
      ADD_FAILURE() << what << "[" << i << "]: cuda " << a[i] << " cpu " << b[i] << " (" << dtype_name(dt) << ")";
      ++failures;
    }
  }
}

// The forward's tensors of `sig` on the device: host's inputs, params and state, each in its spec's dtype
// (batch norm keeps f32 parameters and statistics under f16/bf16); outputs and saved full of garbage.
inline KernelTensors forward_tensors_on_device(const KernelTensors& host, const OpSignature& sig) {
  KernelTensors d;
  for (size_t i = 0; i < host.inputs.size(); ++i) d.inputs.push_back(cuda::to_device(as_dtype(host.inputs[i], sig.inputs[i].dtype)));
  for (size_t i = 0; i < host.params.size(); ++i) d.params.push_back(cuda::to_device(as_dtype(host.params[i], sig.params[i].dtype)));
  for (size_t i = 0; i < host.state.size(); ++i) d.state.push_back(cuda::to_device(as_dtype(host.state[i], sig.state[i].dtype)));
  for (const TensorSpec& s : sig.outputs) d.outputs.push_back(device_garbage(s));
  for (const TensorSpec& s : sig.saved) d.saved.push_back(device_garbage(s));
  if (sig.workspace_bytes) d.workspace = Tensor::empty({static_cast<int64_t>(sig.workspace_bytes)}, DType::kU8, Device::kCuda);
  return d;
}

// And the backward's: host's d_outputs in the outputs' dtypes, garbage input and parameter gradients.
inline void add_backward_tensors_on_device(KernelTensors& d, const KernelTensors& host, const OpSignature& sig) {
  for (size_t i = 0; i < host.d_outputs.size(); ++i)
    d.d_outputs.push_back(cuda::to_device(as_dtype(host.d_outputs[i], sig.outputs[i].dtype)));
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    d.d_inputs.push_back(sig.input_has_grad[i] ? device_garbage(sig.inputs[i]) : Tensor());
  for (const TensorSpec& s : sig.params) d.d_params.push_back(device_garbage(s));
}

// Both of the above: host's tensors on the device for `sig`, forward and backward.
inline KernelTensors upload_for_backward(const KernelTensors& host, const OpSignature& sig) {
  KernelTensors d = forward_tensors_on_device(host, sig);
  add_backward_tensors_on_device(d, host, sig);
  return d;
}

// Multiplies batch norm's gamma (params[0] of host f32 tensors) by factor: outputs well past the filled
// inputs' range, so a fused relu6 clips at 6 as well as at 0.
inline void scale_batch_norm_gamma(KernelTensors& host, float factor) {
  ASSERT_FALSE(host.params.empty());
  Tensor& gamma = host.params[0];
  ASSERT_EQ(gamma.dtype(), DType::kF32);
  float* g = gamma.data<float>();
  for (int64_t i = 0; i < gamma.numel(); ++i) g[i] *= factor;
}

// The cuDNN choices a case can run under: the defaults, depthwise_conv2d as cuDNN's grouped convolution
// (depthwise_conv=cudnn), or conv2d through cuDNN's graph API (conv_api=graph).
enum class CudnnVariant { kDefault, kDepthwiseCudnn, kConvGraphApi };

// The variant's suffix in case names ("" for the defaults).
inline const char* variant_suffix(CudnnVariant v) {
  return v == CudnnVariant::kDepthwiseCudnn ? "_cudnn" : v == CudnnVariant::kConvGraphApi ? "_graph" : "";
}

// The variant's cuda::Policy set for a scope: kernels created inside it run that way.
class CudnnVariantScope {
 public:
  explicit CudnnVariantScope(CudnnVariant v) : before_(cuda::policy()) {
    cuda::Policy p = before_;
    p.depthwise_cudnn = v == CudnnVariant::kDepthwiseCudnn;
    p.conv_graph_api = v == CudnnVariant::kConvGraphApi;
    cuda::set_policy(p);
  }
  ~CudnnVariantScope() { cuda::set_policy(before_); }
  CudnnVariantScope(const CudnnVariantScope&) = delete;
  CudnnVariantScope& operator=(const CudnnVariantScope&) = delete;

 private:
  cuda::Policy before_;
};

// Two device tensors hold the same bytes (a one-pass kernel against its composite).
inline void expect_same_device_bits(const Tensor& x, const Tensor& y, const std::string& what) {
  const Tensor hx = cuda::to_host(x), hy = cuda::to_host(y);
  ASSERT_EQ(hx.nbytes(), hy.nbytes()) << what;
  EXPECT_EQ(0, std::memcmp(hx.raw(), hy.raw(), hx.nbytes())) << what << " differs";
}

// A one-pass fused kernel against its composite (ops/fused.h), each on its own copy of the same tensors:
// forward, then backward, and every output, running statistic, saved tensor of the one-pass kernel (a
// prefix of the composite's: `first`'s saved), defined input gradient and parameter gradient bit for bit.
inline void expect_one_pass_is_the_composite(OpKernel& composite, KernelTensors& a, OpKernel& one_pass,
                                             KernelTensors& b, bool training) {
  composite.forward(a.forward_args(training));
  one_pass.forward(b.forward_args(training));
  expect_same_device_bits(a.outputs[0], b.outputs[0], "output");
  for (size_t i = 0; i < a.state.size(); ++i) expect_same_device_bits(a.state[i], b.state[i], "state " + std::to_string(i));
  for (size_t i = 0; i < b.saved.size(); ++i) expect_same_device_bits(a.saved[i], b.saved[i], "saved " + std::to_string(i));
  if (!composite.signature().has_backward) return;
  composite.backward(a.backward_args(training));
  one_pass.backward(b.backward_args(training));
  for (size_t i = 0; i < a.d_inputs.size(); ++i)
    if (a.d_inputs[i].defined()) expect_same_device_bits(a.d_inputs[i], b.d_inputs[i], "d_input " + std::to_string(i));
  for (size_t i = 0; i < a.d_params.size(); ++i)
    expect_same_device_bits(a.d_params[i], b.d_params[i], "d_param " + std::to_string(i));
}

// The CPU f32 reference's inputs, params, state and incoming gradients rounded to `dt`, so an f16/bf16
// device kernel is compared with the CPU on the values it was given.
inline void round_to(KernelTensors& ref, DType dt) {
  if (dt == DType::kF32) return;
  for (auto* group : {&ref.inputs, &ref.params, &ref.state, &ref.d_outputs})
    for (Tensor& t : *group)
      if (t.defined() && is_floating(t.dtype())) t = t.to(dt).to(DType::kF32);
}

// The device kernel's outputs and updated state (forward), or input and parameter gradients (backward),
// against the CPU's (`cs`: the CPU kernel's signature, for the names).
inline void expect_forward_close(const KernelTensors& dev, const KernelTensors& ref, const OpSignature& cs, DType dt) {
  for (size_t i = 0; i < ref.outputs.size(); ++i) expect_close(dev.outputs[i], ref.outputs[i], dt, "output " + cs.outputs[i].name);
  for (size_t i = 0; i < ref.state.size(); ++i) expect_close(dev.state[i], ref.state[i], dt, "state " + cs.state[i].name);
}
inline void expect_backward_close(const KernelTensors& dev, const KernelTensors& ref, const OpSignature& cs, DType dt) {
  for (size_t i = 0; i < ref.d_inputs.size(); ++i)
    expect_close(dev.d_inputs[i], ref.d_inputs[i], dt, "d_input " + cs.inputs[i].name);
  for (size_t i = 0; i < ref.d_params.size(); ++i)
    expect_close(dev.d_params[i], ref.d_params[i], dt, "d_param " + cs.params[i].name);
}

}  // namespace fastnn::ops
