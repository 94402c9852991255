// Arithmetic for code written once for the host and the device (FASTNN_HD): each function is the same
// operation on both sides. The float ones are rounded on their own — `_rn` intrinsics on the device,
// which nvcc never contracts into an FMA; plain operators on the host, which g++ does not contract in
// ISO C++ mode — so a computation built from them is bitwise the same on the CPU and the GPU (sqrt and
// the basic operations are correctly rounded on both). The double transcendental functions (acos, cos,
// sin) and powf come from glibc and CUDA's libdevice and may differ by an ulp or two.
#pragma once

#include <cmath>
#include <limits>

#include "core/host_device.h"

namespace fastnn::hd {

FASTNN_HD inline float mul(float a, float b) { return FASTNN_HD_PICK(__fmul_rn(a, b), a * b); }
FASTNN_HD inline float add(float a, float b) { return FASTNN_HD_PICK(__fadd_rn(a, b), a + b); }
FASTNN_HD inline float sub(float a, float b) { return FASTNN_HD_PICK(__fsub_rn(a, b), a - b); }
FASTNN_HD inline float div(float a, float b) { return FASTNN_HD_PICK(__fdiv_rn(a, b), a / b); }
FASTNN_HD inline float sqrt(float a) { return FASTNN_HD_PICK(__fsqrt_rn(a), std::sqrt(a)); }
FASTNN_HD inline float pow(float a, float p) { return FASTNN_HD_PICK(powf(a, p), std::pow(a, p)); }

FASTNN_HD inline double mul(double a, double b) { return FASTNN_HD_PICK(__dmul_rn(a, b), a * b); }
FASTNN_HD inline double add(double a, double b) { return FASTNN_HD_PICK(__dadd_rn(a, b), a + b); }
FASTNN_HD inline double sub(double a, double b) { return FASTNN_HD_PICK(__dsub_rn(a, b), a - b); }
FASTNN_HD inline double div(double a, double b) { return FASTNN_HD_PICK(__ddiv_rn(a, b), a / b); }
FASTNN_HD inline double sqrt(double a) { return FASTNN_HD_PICK(::sqrt(a), std::sqrt(a)); }
FASTNN_HD inline double acos(double a) { return FASTNN_HD_PICK(::acos(a), std::acos(a)); }
FASTNN_HD inline double cos(double a) { return FASTNN_HD_PICK(::cos(a), std::cos(a)); }
FASTNN_HD inline double sin(double a) { return FASTNN_HD_PICK(::sin(a), std::sin(a)); }

FASTNN_HD inline bool finite(double x) { return FASTNN_HD_PICK(isfinite(x), std::isfinite(x)); }
FASTNN_HD inline float quiet_nan() {
  return FASTNN_HD_PICK(__int_as_float(0x7fc00000), std::numeric_limits<float>::quiet_NaN());
}

}  // namespace fastnn::hd
