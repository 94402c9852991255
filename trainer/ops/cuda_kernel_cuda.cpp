#include "trainer/ops/cuda_kernel.h"

#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops::gpu {

DType cuda_compute_dtype(std::string_view op, std::span<const TensorSpec> inputs) {
  const DType dt = compute_dtype(op, inputs);
  if (dt != DType::kF32 && dt != DType::kF16 && dt != DType::kBF16)
    throw ConfigError(str(op, ": the CUDA kernel computes in f32, f16 or bf16, not ", dtype_name(dt)));
  return dt;
}

OpSignature cuda_signature(const KernelFactory& cpu, const Attrs& attrs, std::span<const TensorSpec> inputs,
                           DType compute) {
  std::vector<TensorSpec> f32;
  for (const TensorSpec& s : inputs) {
    f32.push_back(renamed(s, s.name));
    if (is_floating(s.dtype)) f32.back().dtype = DType::kF32;
  }
  OpSignature sig = cpu(attrs, f32)->signature();
  for (auto* group : {&sig.inputs, &sig.params, &sig.state, &sig.outputs, &sig.saved})
    for (TensorSpec& s : *group)
      if (s.dtype == DType::kF32) s.dtype = compute;
  sig.workspace_bytes = 0;
  return sig;
}

KernelFactory cpu_factory(const OpRegistry& r, std::string_view op) {
  const OpDef& d = r.get(op);
  auto it = d.kernels.find(Device::kCpu);
  FASTNN_CHECK(it != d.kernels.end(), "op ", op, " has no CPU kernel");
  return it->second;
}

void reset_flag(int* flag, cudaStream_t s) { CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), s)); }

void check_label_flag(const char* op, const int* flag, int64_t classes, cudaStream_t s) {
  const cuda::Policy p = cuda::policy();
  if (!p.check_labels) return;
  if (p.defer_label_checks) {  // the step raises it after its one read-back (cuda/runtime.h)
    cuda::defer_label_check(op, flag, classes, s);
    return;
  }
  int host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (host != 0)
    throw Error(str(op, ": the label of sample ", host - 1, " is outside [0, ", classes, ") (CUDA kernel)"));
}

}  // namespace fastnn::ops::gpu
