// Which CPU kernels an NHWC graph runs: the fast ones (the convolution on oneDNN, trainer/ops/*_dnnl.cpp,
// built when libdnnl-dev is found; batch norm over rows of channels) or, for debugging, the reference
// kernels every fast kernel is tested against (the NCHW ones inside the layout adapter).
// FASTNN_CPU_KERNELS=reference selects the reference; unset or "fast", the fast kernels where they
// exist. The variable is read once, when the first kernel is made. (NHWC kernels that are bitwise the
// reference, the pools' and concat's, are used either way.)
#pragma once

#include <string>

namespace fastnn::ops {

// Whether this build has the oneDNN kernels.
bool have_dnnl_kernels();
// Whether kernels made now should be the fast ones (not overridden by the variable or a scope below).
// Throws ConfigError on another value of the variable.
bool use_fast_cpu_kernels();
// Whether kernels made now should be the oneDNN ones: built in and not overridden by
// FASTNN_CPU_KERNELS=reference. Throws ConfigError on another value of the variable.
bool use_dnnl_kernels();
// While one exists, kernels made take the reference (as FASTNN_CPU_KERNELS=reference does): for the
// tests that hold an NHWC graph bitwise to the NCHW one. Kernels already made keep what they are.
class ScopedReferenceCpuKernels {
 public:
  ScopedReferenceCpuKernels();
  ~ScopedReferenceCpuKernels();
  ScopedReferenceCpuKernels(const ScopedReferenceCpuKernels&) = delete;
  ScopedReferenceCpuKernels& operator=(const ScopedReferenceCpuKernels&) = delete;
};

// Whether the fast kernels made now may use Winograd convolutions where they pay (conv_bn_fold_dnnl.cpp):
// not with FASTNN_CPU_WINOGRAD=0 (for debugging: the direct convolutions' rounding) nor while a
// ScopedDirectConvolutions exists. Throws ConfigError on a value other than 0 or 1.
bool use_winograd_convolutions();
// While one exists, kernels made use direct convolutions only: for the tests that compare the two.
class ScopedDirectConvolutions {
 public:
  ScopedDirectConvolutions();
  ~ScopedDirectConvolutions();
  ScopedDirectConvolutions(const ScopedDirectConvolutions&) = delete;
  ScopedDirectConvolutions& operator=(const ScopedDirectConvolutions&) = delete;
};

// Whether the fast kernels can compute in bfloat16 here: oneDNN's, with bf16 instructions.
bool cpu_bf16_available();

// For messages: "oneDNN 2.6.3 (avx512_core)", "reference (FASTNN_CPU_KERNELS=reference)" or
// "reference (built without oneDNN)".
std::string cpu_kernels_description();

}  // namespace fastnn::ops
