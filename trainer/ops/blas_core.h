// Which OpenBLAS kernel set ("core") the CPU GEMMs run on, and a better one where OpenBLAS does not
// know this CPU.
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: at load time it picks its kernels from the CPU's
// family and model numbers. A CPU newer than the library (OpenBLAS 0.3.21 and Intel's Emerald Rapids,
// family 6 model 207, for one) gets the generic fallback, Prescott's SSE3 kernels: about a fifth of
// the AVX-512 kernels' speed (sgemm 12.6 vs 62 GFLOP/s on one core of such a machine). fastnn then
// re-picks once, before its first GEMM, from the CPU's feature flags instead — the same switch
// OpenBLAS makes when OPENBLAS_CORETYPE is set before it loads. A user's OPENBLAS_CORETYPE is never
// overridden, and a core OpenBLAS chose itself is kept.
#pragma once

#include <string>

namespace fastnn::ops::cpu {

// The instruction-set extensions that decide between OpenBLAS's x86-64 kernel sets (each usable by
// the OS too: the kernel saves its registers).
struct CpuFeatures {
  bool avx2_fma = false;     // Haswell's kernels
  bool avx512 = false;       // F, BW, DQ and VL: SkylakeX's
  bool avx512_bf16 = false;  // with AVX-512: Cooperlake's (what OpenBLAS 0.3.21 gives Sapphire Rapids)
};

CpuFeatures this_cpu_features();

// The core to switch to when OpenBLAS fell back to its generic one (`current` == "Prescott") on a CPU
// with better features and the user set no OPENBLAS_CORETYPE; empty when the current core stays.
std::string better_blas_core(const std::string& current, const CpuFeatures& cpu, bool user_set_coretype);

struct BlasCore {
  std::string name;    // OpenBLAS's name of the kernels in use
  std::string chosen;  // how: "OpenBLAS", "OPENBLAS_CORETYPE", or fastnn's switch with its reason
};

// Picks the core on the first call (thread-safe; cpu::gemm calls it before every GEMM, so it runs
// before the first one) and returns what is in use. The switch leaves OpenBLAS without kernels for a
// moment, so it must not run while OpenBLAS works on another thread: `fastnn` calls it first thing in
// main(). Not from a static initialiser: OpenBLAS's worker threads, started by its own constructor,
// are then still setting themselves up (a test run crashed once in ~1,500 processes that way).
const BlasCore& blas_core();

}  // namespace fastnn::ops::cpu
