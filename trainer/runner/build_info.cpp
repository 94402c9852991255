#include "trainer/runner/build_info.h"

#include <sstream>

#include "trainer/runner/device_setup.h"
#include "trainer/ops/blas_core.h"
#include "trainer/ops/cpu_kernel_choice.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cudnn.h>
#endif
#ifdef FASTNN_HAVE_NCCL
#include <nccl.h>
#endif
#ifdef FASTNN_HAVE_MPI
#include <mpi.h>
#endif

extern "C" char* openblas_get_config(void);

namespace fastnn::runner {
namespace {

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

std::string build_info() {
  std::ostringstream os;
  os << "backends: cpu";
#ifdef FASTNN_HAVE_CUDA
  os << ", cuda";
#endif
#ifdef FASTNN_HAVE_NCCL
  os << ", nccl";
#endif
#ifdef FASTNN_HAVE_MPI
  os << ", mpi";
#endif
  os << "\n";
#ifdef FASTNN_HAVE_CUDA
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  os << "CUDA runtime: " << runtime / 1000 << "." << (runtime % 1000) / 10 << " (built with " << CUDART_VERSION / 1000
     << "." << (CUDART_VERSION % 1000) / 10 << ")\n";
  const size_t cudnn = cudnnGetVersion();  // 9.x: major * 10000 + minor * 100 + patch
  os << "cuDNN: " << dotted(static_cast<int>(cudnn / 10000), static_cast<int>(cudnn % 10000 / 100),
                            static_cast<int>(cudnn % 100))
     << " (built with " << dotted(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL) << ")\n";
  os << "GPU: " << (cuda_present() ? "present" : "none found") << "\n";
#else
  os << "CUDA: not built (configure with nvcc and cuDNN found)\n";
#endif
#ifdef FASTNN_HAVE_NCCL
  int nccl = 0;
  if (ncclGetVersion(&nccl) != ncclSuccess) nccl = 0;
  os << "NCCL: " << dotted(nccl / 10000, nccl % 10000 / 100, nccl % 100) << "\n";
#endif
#ifdef FASTNN_HAVE_MPI
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string line(mpi, static_cast<size_t>(len));
  if (const size_t nl = line.find_first_of("\n,"); nl != std::string::npos) line.resize(nl);
  os << "MPI: " << line << "\n";
#endif
  const ops::cpu::BlasCore& core = ops::cpu::blas_core();  // first: the config names the core in use
  os << "BLAS: " << openblas_get_config() << "\n";
  os << "BLAS core: " << core.name << ", chosen by " << core.chosen << "\n";
  // NHWC graphs' convolutions (trainer/ops/cpu_kernel_choice.h).
  os << "CPU kernels: " << ops::cpu_kernels_description() << "\n";
  return os.str();
}

}  // namespace fastnn::runner
