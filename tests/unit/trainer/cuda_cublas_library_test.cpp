// cuBLAS opened on first use (trainer/cuda/cublas_library.h), checked without a GPU: nothing of cuBLAS is
// mapped into the process until the first call, which loads it and resolves every entry point the CUDA
// backend calls; the status descriptions come from the library itself.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(CublasLibrary, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <fstream>
#include <sstream>
#include <string>

#include "trainer/cuda/cublas_library.h"

namespace fastnn::cuda {
namespace {

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(library) != std::string::npos;
}

TEST(CublasLibrary, LoadedOnFirstUseOnly) {
  // Neither libcublas nor libcublasLt (whose start-up costs a tenth of a second) is mapped at start.
  EXPECT_FALSE(mapped("libcublas")) << "a test program that makes no GEMM loaded cuBLAS at start";
  const CublasLibrary& lib = cublas();
  EXPECT_TRUE(mapped("libcublas.so"));
  EXPECT_NE(lib.create, nullptr);
  EXPECT_NE(lib.set_stream, nullptr);
  EXPECT_NE(lib.set_workspace, nullptr);
  EXPECT_NE(lib.set_math_mode, nullptr);
  EXPECT_NE(lib.gemm_ex, nullptr);
  ASSERT_NE(lib.status_string, nullptr);
  // The library's own descriptions ("success", "the library was not initialized" in cuBLAS 13).
  const std::string success = lib.status_string(CUBLAS_STATUS_SUCCESS);
  const std::string not_initialized = lib.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_FALSE(success.empty());
  EXPECT_FALSE(not_initialized.empty());
  EXPECT_NE(success, not_initialized);
  EXPECT_EQ(&cublas(), &lib) << "loaded once";
}

TEST(CublasLibrary, CheckMacroNamesTheCallAndStatus) {
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "CUBLAS_CHECK accepted a failure";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuBLAS"), std::string::npos) << what;
    EXPECT_NE(what.find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fastnn::cuda

#endif
