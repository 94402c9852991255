// cuBLAS GEMM in the CPU's row-major convention (mirrors ops::cpu::gemm in ops/cpu_kernel.h):
//   C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, all row-major with leading dims lda/ldb/ldc.
// Storage dtype f32, f16 or bf16 for A, B and C alike; accumulation is always f32 (CUBLAS_COMPUTE_32F;
// f16/bf16 use tensor cores). f32 uses TF32 tensor cores only when cuda::policy().allow_tf32.
// Runs on stream `s` with the calling thread's cuBLAS handle; dims must fit in int.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "trainer/tensor.h"

namespace fastnn::cuda {

void gemm(cudaStream_t s, DType dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, float beta, void* c, int64_t ldc);

}  // namespace fastnn::cuda
