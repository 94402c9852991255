// Which OpenBLAS kernel set ("core") the CPU GEMMs run on, and a better one where OpenBLAS does not
// know this CPU.
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: at load time it picks its kernels from the CPU's
// family and model numbers. A CPU newer than the library (OpenBLAS 0.3.21 and Intel's Emerald Rapids,
// family 6 model 207, for one) gets the generic fallback, Prescott's SSE3 kernels: about a fifth of
// the AVX-512 kernels' speed (sgemm 12.6 vs 62 GFLOP/s on one core of such a machine). fastnn then
// picks from the CPU's feature flags instead, by setting OPENBLAS_CORETYPE — which OpenBLAS reads as it
// loads — and starting itself again (`reexec_with_cpu_library_settings`, the first thing `fastnn` does).
//
// The same start sets OMP_WAIT_POLICY=passive in a build with oneDNN (whose Debian build runs on
// OpenMP), unless the user set it: libgomp reads it as it loads, and by default its threads spin for a
// while after each parallel region, taking the cores from oneTBB's workers, which run the next op
// (a ResNet-20 CPU training step: 178.9 ms spinning, 156.3 ms passive; bench train, batch 64). With it,
// GOMP_SPINCOUNT=3000 (unless the user set that): a spin of tens of microseconds, so that back-to-back
// oneDNN primitives find their threads awake (ResNet-20 1229 -> 1299 images/s, MobileNet v2 +8%).
// A user's OPENBLAS_CORETYPE is never overridden, and a core OpenBLAS chose itself is kept.
//
// Why a new start and not a switch in the running process (gotoblas_dynamic_quit / _init, 2026-11-27
// until 9c3c29f): the switch leaves OpenBLAS without kernels for a moment while its worker thread,
// started by its own constructor, exists; three processes of ~1,500 a full test run each, on three runs,
// died of SIGSEGV silently, in code that had just switched (never reproduced in 4,000 runs alone).
// Other programs (tests, benchmarks) do not switch: scripts/test.sh exports the core `fastnn` picks.
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
  std::string chosen;  // how: "OpenBLAS", "OPENBLAS_CORETYPE", or fastnn's pick with its reason
};

// What is in use (computed once; thread-safe). In a process `fastnn` started again with a better core,
// also removes the two variables that did it, so the environment is the user's again (a child process
// makes the same choice itself).
const BlasCore& blas_core();

// Whether OMP_WAIT_POLICY=passive is to be set: in a build with oneDNN, when the user set none.
bool openmp_needs_passive_wait(bool user_set_wait_policy);

// A warning for CPU training where the user's OMP_WAIT_POLICY (`policy`, null when unset) is ACTIVE in a
// build with oneDNN: libgomp's threads then never sleep and take the cores oneTBB's workers need. Empty
// otherwise.
std::string openmp_wait_warning(const char* policy);

// When OpenBLAS fell back to Prescott on a CPU with better features and the user set no
// OPENBLAS_CORETYPE, sets it (and a marker that this process set it); when the command runs CPU graphs
// (`runs_cpu_graphs`: a new start costs about 80 ms, which `check` or `inspect` need not pay) and
// openmp_needs_passive_wait, sets OMP_WAIT_POLICY=passive and, unless the user set it, GOMP_SPINCOUNT
// (which stay set, for child processes too).
// If either was set, replaces
// the process with /proc/self/exe and the same argv, once. Returns when no new start is needed or the
// exec failed (the process goes on as it is). Call first thing in main(), before any thread of ours.
void reexec_with_cpu_library_settings(char** argv, bool runs_cpu_graphs);

}  // namespace fastnn::ops::cpu
