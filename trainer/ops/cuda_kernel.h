// Plumbing shared by the CUDA op kernels (ops/*_cuda.cpp), not for op users.
//
// A CUDA kernel reuses its op's CPU factory for attribute parsing and validation: cuda_signature()
// runs the CPU factory on the same inputs with f32 in place of the compute dtype and returns its
// signature with the dtype put back (workspace cleared), so both devices accept exactly the same
// attributes and shapes and agree on every tensor of the signature.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "trainer/cuda/runtime.h"
#include "trainer/ops/op.h"

namespace fastnn::ops::gpu {

// f32, f16 or bf16 (ConfigError otherwise): the compute dtypes of the CUDA kernels.
DType cuda_compute_dtype(std::string_view op, std::span<const TensorSpec> inputs);

// The CPU kernel's signature for `inputs` with f32 floating tensors turned into `compute`.
OpSignature cuda_signature(const KernelFactory& cpu_factory, const Attrs& attrs, std::span<const TensorSpec> inputs,
                           DType compute);

// The registered CPU factory of `op` (what cuda_signature needs).
KernelFactory cpu_factory(const OpRegistry& r, std::string_view op);

// make_cuda_kernel<K>(op, dt, args...) -> K<float>, K<__half> or K<__nv_bfloat16>.
template <template <typename> class K, typename... Args>
std::unique_ptr<OpKernel> make_cuda_kernel(DType dt, Args&&... args) {
  if (dt == DType::kF32) return std::make_unique<K<float>>(std::forward<Args>(args)...);
  if (dt == DType::kF16) return std::make_unique<K<__half>>(std::forward<Args>(args)...);
  return std::make_unique<K<__nv_bfloat16>>(std::forward<Args>(args)...);
}

// Typed device pointers (the signature check has already matched dtypes); null for undefined tensors.
template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(const_cast<void*>(t.raw())) : nullptr;
}

inline cudaStream_t stream_of(const ForwardArgs& a) { return cuda::stream_or_current(a.stream); }
inline cudaStream_t stream_of(const BackwardArgs& a) { return cuda::stream_or_current(a.stream); }

// Bytes rounded up so that workspace pieces stay 256-byte aligned.
inline size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The bad-label flag protocol of softmax_xent / top_k: zero a device int before the kernel, then
// (when the policy checks labels) read it back, synchronising the stream, and throw Error if set.
void reset_flag(int* flag, cudaStream_t s);
void check_label_flag(const char* op, const int* flag, int64_t classes, cudaStream_t s);

}  // namespace fastnn::ops::gpu
