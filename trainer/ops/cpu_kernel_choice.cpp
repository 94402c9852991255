#include "trainer/ops/cpu_kernel_choice.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "core/check.h"

namespace fastnn::ops {

#ifdef FASTNN_HAVE_DNNL
std::string dnnl_description();  // ops/dnnl_runtime.h; declared here to keep oneDNN's large header out
bool dnnl_has_bf16();
#endif

namespace {
std::atomic<int> reference_scopes{0};
std::atomic<int> direct_scopes{0};

// Whether the environment variable `name` selects `other` over `usual` (unset or empty: `usual`); any other
// value is a ConfigError that names both.
bool env_selects(const char* name, std::string_view usual, std::string_view other) {
  const char* v = std::getenv(name);
  const std::string_view s = v ? v : "";
  if (s.empty() || s == usual) return false;
  if (s == other) return true;
  throw ConfigError(str(name, "='", s, "': use '", usual, "' (the default) or '", other, "'"));
}

bool winograd_refused() {
  static const bool refused = env_selects("FASTNN_CPU_WINOGRAD", "1", "0");
  return refused;
}

bool reference_requested() {
  static const bool reference = env_selects("FASTNN_CPU_KERNELS", "fast", "reference");
  return reference;
}
}  // namespace

bool have_dnnl_kernels() {
#ifdef FASTNN_HAVE_DNNL
  return true;
#else
  return false;
#endif
}

bool use_fast_cpu_kernels() { return !reference_requested() && reference_scopes.load() == 0; }
bool use_dnnl_kernels() { return have_dnnl_kernels() && use_fast_cpu_kernels(); }

ScopedReferenceCpuKernels::ScopedReferenceCpuKernels() { ++reference_scopes; }
ScopedReferenceCpuKernels::~ScopedReferenceCpuKernels() { --reference_scopes; }

bool use_winograd_convolutions() { return use_dnnl_kernels() && !winograd_refused() && direct_scopes.load() == 0; }
ScopedDirectConvolutions::ScopedDirectConvolutions() { ++direct_scopes; }
ScopedDirectConvolutions::~ScopedDirectConvolutions() { --direct_scopes; }

bool cpu_bf16_available() {
#ifdef FASTNN_HAVE_DNNL
  return use_dnnl_kernels() && dnnl_has_bf16();
#else
  return false;
#endif
}

std::string cpu_kernels_description() {
  if (!have_dnnl_kernels()) return "reference (built without oneDNN)";
  if (reference_requested()) return "reference (FASTNN_CPU_KERNELS=reference)";
#ifdef FASTNN_HAVE_DNNL
  return dnnl_description();
#else
  return "reference";
#endif
}

}  // namespace fastnn::ops
