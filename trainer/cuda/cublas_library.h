// cuBLAS, opened with dlopen on the first GEMM instead of linked. Loading libcublas.so runs the static
// constructors of libcublasLt (it registers every kernel of a 540 MB library): 0.11-0.14 s and about
// 90 MB of touched pages at every process start, even on a machine without a GPU, where no cuBLAS call
// is ever made. Every `fastnn` command and every test program paid it; now only a process that runs a
// GEMM on the GPU does.
//
// The library is looked up by its soname (LD_LIBRARY_PATH, the loader cache), then in the folder the
// build found cuBLAS in. The entry points are the few the CUDA backend calls.
#pragma once

#include <cublas_v2.h>

#include "core/check.h"

namespace fastnn::cuda {

struct CublasLibrary {
  cublasStatus_t (*create)(cublasHandle_t* handle);
  cublasStatus_t (*set_stream)(cublasHandle_t handle, cudaStream_t stream);
  cublasStatus_t (*set_workspace)(cublasHandle_t handle, void* workspace, size_t bytes);
  cublasStatus_t (*set_math_mode)(cublasHandle_t handle, cublasMath_t mode);
  cublasStatus_t (*gemm_ex)(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
                            cublasComputeType_t compute_type, cublasGemmAlgo_t algo);
  const char* (*status_string)(cublasStatus_t status);
};

// The library, loaded by the first call (thread-safe). Throws Error naming the library and the
// loader's reason when it cannot be opened or lacks an entry point; the next call tries again.
const CublasLibrary& cublas();

}  // namespace fastnn::cuda

#define CUBLAS_CHECK(expr)                                                                        \
  do {                                                                                            \
    cublasStatus_t fastnn_err_ = (expr);                                                          \
    if (fastnn_err_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                        \
      ::fastnn::detail::library_call_failed(__FILE__, __LINE__, "cuBLAS", #expr,                 \
                                            ::fastnn::cuda::cublas().status_string(fastnn_err_)); \
  } while (0)
