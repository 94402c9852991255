#include "trainer/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

namespace fastnn::cuda {

namespace {

// libcublas.so.<major> of the headers this was built with: another major version has another ABI.
const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

void* open_library() {
  std::string reasons;
  for (const std::string& name : {kSoname, std::string(FASTNN_CUBLAS_DIR) + "/" + kSoname}) {
    if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    reasons += str("\n  ", name, ": ", dlerror());
  }
  throw Error(str("cuBLAS could not be loaded (the CUDA backend's GEMMs need it; set LD_LIBRARY_PATH to the folder of ",
                  kSoname, "):", reasons));
}

template <typename Fn>
void resolve(void* handle, const char* symbol, Fn*& fn) {
  void* address = dlsym(handle, symbol);
  FASTNN_CHECK(address != nullptr, kSoname, " has no ", symbol, " (a cuBLAS older than the headers fastnn was built with?)");
  fn = reinterpret_cast<Fn*>(address);
}

CublasLibrary load() {
  void* handle = open_library();
  CublasLibrary lib{};
  // The names are the exported symbols: cublas_v2.h maps cublasCreate and others to their _v2 forms.
  resolve(handle, "cublasCreate_v2", lib.create);
  resolve(handle, "cublasSetStream_v2", lib.set_stream);
  resolve(handle, "cublasSetWorkspace_v2", lib.set_workspace);
  resolve(handle, "cublasSetMathMode", lib.set_math_mode);
  resolve(handle, "cublasGemmEx", lib.gemm_ex);
  resolve(handle, "cublasGetStatusString", lib.status_string);
  return lib;  // the handle stays open for the life of the process
}

}  // namespace

const CublasLibrary& cublas() {
  // A function-local static: initialised once, thread-safe, and tried again after a load that threw.
  static const CublasLibrary lib = load();
  return lib;
}

}  // namespace fastnn::cuda
