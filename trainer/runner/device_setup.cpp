#include "trainer/runner/device_setup.h"

#include <algorithm>

#include "core/check.h"

#ifdef FASTNN_HAVE_CUDA
#include "trainer/cuda/runtime.h"
#endif

namespace fastnn::runner {

std::string ComputeTarget::describe() const {
  return device == Device::kCpu ? str("cpu ", dtype_name(dtype)) : str("cuda:", device_index, " ", dtype_name(dtype));
}

bool cuda_built() {
#ifdef FASTNN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_present() {
#ifdef FASTNN_HAVE_CUDA
  return cuda::device_available();
#else
  return false;
#endif
}

ComputeTarget resolve_compute_target(const JobConfig& c, int local_rank) {
  ComputeTarget t;
  const std::string& d = c.device();
  if (d == "cuda") {
    if (!cuda_built()) throw ConfigError("device=cuda: this fastnn was built without the CUDA backend (-DFASTNN_CUDA=ON, nvcc and cuDNN)");
    if (!cuda_present()) throw ConfigError("device=cuda: no CUDA device or driver found");
    t.device = Device::kCuda;
  } else if (d == "auto") {
    t.device = cuda_present() ? Device::kCuda : Device::kCpu;
  } else if (d != "cpu") {
    throw ConfigError(str("device \"", d, "\" is not one of: cpu, cuda, auto"));
  }
  if (t.device == Device::kCpu) return t;  // the CPU ops compute in f32 whatever precision says
#ifdef FASTNN_HAVE_CUDA
  t.device_index = std::max(0, local_rank) % std::max(1, cuda::device_count());
#endif
  const std::string& p = c.precision();
  if (p == "fp16" || (p == "auto" && c.use_fp16())) t.dtype = DType::kF16;
  else if (p == "bf16") t.dtype = DType::kBF16;
  else if (p == "fp32" || p == "auto") t.dtype = DType::kF32;
  else throw ConfigError(str("precision \"", p, "\" is not one of: auto, fp32, fp16, bf16"));
  return t;
}

LossScalerOptions loss_scaler_options(const JobConfig& c, DType dtype) {
  LossScalerOptions o;
  if (dtype != DType::kF16) return o;  // f32 and bf16 (f32's exponent range) need no scaling
  o.max_scale = 32768.0;  // the scale rides on an f16 dLoss (max 65504)
  o.initial_scale = std::min(c.loss_scale(), o.max_scale);
  o.min_scale = std::min(1.0, o.initial_scale);
  o.dynamic = c.dynamic_loss_scale();
  o.growth_interval = c.loss_scale_window();
  return o;
}

void select_device(const ComputeTarget& t) {
  if (t.device != Device::kCuda) return;
#ifdef FASTNN_HAVE_CUDA
  cuda::init_backend(t.device_index);
#else
  throw ConfigError("device=cuda: this fastnn was built without the CUDA backend");
#endif
}

void* device_stream(const ComputeTarget& t) {
  if (t.device != Device::kCuda) return nullptr;
#ifdef FASTNN_HAVE_CUDA
  return cuda::current_stream();
#else
  throw ConfigError("device=cuda: this fastnn was built without the CUDA backend");
#endif
}

}  // namespace fastnn::runner
