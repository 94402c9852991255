// The CUDA storage type of a compute dtype, for host code that launches typed kernels
// (CUDA builds only): with_storage_type(dt, who, fn) calls fn(float{}), fn(__half{}) or
// fn(__nv_bfloat16{}); any other dtype: Error naming `who`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.h"
#include "trainer/tensor.h"

namespace fastnn::cuda {

template <typename Fn>
void with_storage_type(DType dt, const char* who, Fn&& fn) {
  switch (dt) {
    case DType::kF32: return fn(float{});
    case DType::kF16: return fn(__half{});
    case DType::kBF16: return fn(__nv_bfloat16{});
    default: throw Error(str(who, ": compute dtype ", dtype_name(dt), " is not f32, f16 or bf16"));
  }
}

}  // namespace fastnn::cuda
