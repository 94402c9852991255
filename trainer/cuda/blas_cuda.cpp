#include "trainer/cuda/blas.h"

#include <climits>

#include "trainer/cuda/cublas_library.h"
#include "trainer/cuda/runtime.h"

namespace fastnn::cuda {

namespace {
int to_int(int64_t v) {
  FASTNN_CHECK(v >= 0 && v <= INT_MAX, "GEMM dimension ", v, " exceeds the cuBLAS int range");
  return static_cast<int>(v);
}

cudaDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
    default: throw Error(str("cuBLAS GEMM on ", dtype_name(dt)));
  }
}
}  // namespace

void gemm(cudaStream_t s, DType dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, float beta, void* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const cudaDataType_t t = data_type(dt);
  const cublasComputeType_t compute =
      dt == DType::kF32 && policy().allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
  CUBLAS_CHECK(cublas().gemm_ex(cublas_handle(s), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                            to_int(n), to_int(m), to_int(k), &alpha, b, t, to_int(ldb), a, t, to_int(lda), &beta, c, t,
                            to_int(ldc), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace fastnn::cuda
