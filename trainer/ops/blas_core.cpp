#include "trainer/ops/blas_core.h"

#include <strings.h>
#include <unistd.h>

#include <cstdlib>

#include "core/check.h"

extern "C" char* openblas_get_corename(void);  // OpenBLAS's own

namespace fastnn::ops::cpu {

CpuFeatures this_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  // GCC's checks include the OS's XSAVE state (XCR0), so a feature listed is one the OS supports.
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  return f;
}

std::string better_blas_core(const std::string& current, const CpuFeatures& cpu, bool user_set_coretype) {
  if (user_set_coretype || current != "Prescott") return "";
  if (cpu.avx512_bf16) return "Cooperlake";
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return "";
}

namespace {

// Set (to the core's name) in the environment of the process fastnn started again with
// OPENBLAS_CORETYPE set by itself, so that process can tell the user's variable from its own.
constexpr const char* kPickedMarker = "FASTNN_BLAS_CORE_PICKED";
// Set in the environment of a process fastnn started again (for either setting), so it does not loop.
constexpr const char* kRestartedMarker = "FASTNN_RESTARTED";
// libgomp's spins (about 100,000 a millisecond, by its own estimate) before an idle OpenMP thread sleeps,
// where the user set no OMP_WAIT_POLICY: 3,000 against none were 5-9% more images/s in CPU training
// steps (ResNet-20 b64, MobileNet v2 96² b16, LeNet b64; 30,000 and libgomp's default 300,000 were
// slower than none: the spinning takes the cores from oneTBB's workers).
constexpr const char* kShortSpin = "3000";

std::string corename() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

BlasCore find_core() {
  const std::string name = corename();
  if (!std::getenv(kPickedMarker)) ::unsetenv(kRestartedMarker);
  if (const char* picked = std::getenv(kPickedMarker)) {
    BlasCore core{name, str("fastnn (OpenBLAS fell back to Prescott on this CPU; its AVX-512/AVX2 flags give ", picked,
                            "; set OPENBLAS_CORETYPE to choose)")};
    // The user's environment again: a child process (mpirun's ranks, a pipeline worker) picks itself.
    ::unsetenv("OPENBLAS_CORETYPE");
    ::unsetenv(kPickedMarker);
    ::unsetenv(kRestartedMarker);
    return core;
  }
  if (std::getenv("OPENBLAS_CORETYPE")) return {name, "OPENBLAS_CORETYPE"};
  if (!better_blas_core(name, this_cpu_features(), false).empty())
    return {name, "OpenBLAS (its generic fallback on this CPU; the fastnn command starts with a better core)"};
  return {name, "OpenBLAS"};
}

}  // namespace

const BlasCore& blas_core() {
  static const BlasCore core = find_core();
  return core;
}

void reexec_with_cpu_library_settings(char** argv, bool runs_cpu_graphs) {
  if (std::getenv(kPickedMarker) || std::getenv(kRestartedMarker)) return;  // this is the new start
  if (argv == nullptr || argv[0] == nullptr) return;
  const bool user_set = std::getenv("OPENBLAS_CORETYPE") != nullptr;
  const std::string better = better_blas_core(corename(), this_cpu_features(), user_set);
  const bool omp_wait = runs_cpu_graphs && openmp_needs_passive_wait(std::getenv("OMP_WAIT_POLICY") != nullptr);
  if (better.empty() && !omp_wait) return;
  if (!better.empty()) {
    ::setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
    ::setenv(kPickedMarker, better.c_str(), 1);
  }
  // A short spin before the sleep (libgomp reads GOMP_SPINCOUNT over the policy's default of none), unless
  // the user set one: back-to-back oneDNN primitives (a convolution, then the next pass's reorder) then
  // find their threads awake instead of waking them each time.
  const bool short_spin = omp_wait && std::getenv("GOMP_SPINCOUNT") == nullptr;
  if (omp_wait) ::setenv("OMP_WAIT_POLICY", "passive", 1);
  if (short_spin) ::setenv("GOMP_SPINCOUNT", kShortSpin, 1);
  ::setenv(kRestartedMarker, "1", 1);
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc, say): go on with the fallback kernels and the user's environment.
  if (!better.empty()) {
    ::unsetenv("OPENBLAS_CORETYPE");
    ::unsetenv(kPickedMarker);
  }
  if (omp_wait) ::unsetenv("OMP_WAIT_POLICY");
  if (short_spin) ::unsetenv("GOMP_SPINCOUNT");
  ::unsetenv(kRestartedMarker);
}

std::string openmp_wait_warning(const char* policy) {
#ifdef FASTNN_HAVE_DNNL
  if (policy == nullptr || ::strcasecmp(policy, "active") != 0) return "";
  return str("OMP_WAIT_POLICY=", policy, " keeps oneDNN's OpenMP threads spinning on the cores fastnn's other "
             "CPU kernels need (training steps ran 12-17% slower on 2 cores: ResNet-50, ResNet-20, MobileNet v2); unset it, "
             "and fastnn lets them spin briefly, then sleep");
#else
  (void)policy;
  return "";
#endif
}

bool openmp_needs_passive_wait(bool user_set_wait_policy) {
#ifdef FASTNN_HAVE_DNNL
  return !user_set_wait_policy;
#else
  (void)user_set_wait_policy;
  return false;
#endif
}

}  // namespace fastnn::ops::cpu
