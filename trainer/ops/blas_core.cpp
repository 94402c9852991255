#include "trainer/ops/blas_core.h"

#include <cstdlib>

#include "core/check.h"

// OpenBLAS's own entry points. The two dynamic-arch ones exist only in DYNAMIC_ARCH builds, hence
// weak: without them the library has one core and there is nothing to pick.
extern "C" {
char* openblas_get_corename(void);
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

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

std::string corename() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

BlasCore pick_core() {
  const bool user_set = std::getenv("OPENBLAS_CORETYPE") != nullptr;
  BlasCore core{corename(), user_set ? "OPENBLAS_CORETYPE" : "OpenBLAS"};
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return core;
  const std::string better = better_blas_core(core.name, this_cpu_features(), user_set);
  if (better.empty()) return core;
  // gotoblas_dynamic_init reads OPENBLAS_CORETYPE; the variable is removed again, leaving the
  // environment as the user gave it (a child process makes the same choice itself).
  ::setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  ::unsetenv("OPENBLAS_CORETYPE");
  const std::string now = corename();
  core.chosen = str("fastnn (OpenBLAS fell back to ", core.name, " on this CPU; its AVX-512/AVX2 flags give ", now,
                    "; set OPENBLAS_CORETYPE to choose)");
  core.name = now;
  return core;
}

}  // namespace

const BlasCore& blas_core() {
  static const BlasCore core = pick_core();
  return core;
}

}  // namespace fastnn::ops::cpu
