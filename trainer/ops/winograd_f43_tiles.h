// The pieces of fastnn's F(4x4, 3x3) Winograd convolution (winograd_f43.h) that its forward
// (winograd_f43.cpp) and filter gradient (winograd_f43_filter_grad.cpp) share: the sizes of the
// transformed space, the transforms of one tile into it, and register-blocked products in it with any
// strides and row count. The forward keeps its own products, with their strides fixed: built on
// six_rows_of_sixteen it ran 7-17% slower on ResNet-50's 64- and 128-channel layers (zen3, 12 interleaved
// rounds); sharing input_tile cost nothing measurable (4 interleaved rounds, one thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include "trainer/ops/winograd_f43.h"

namespace fastnn::ops::cpu::f43 {

constexpr int64_t kAlpha = 6;  // the transformed tile's side: 4 outputs + 3 - 1
constexpr int64_t kPositions = kAlpha * kAlpha;
constexpr int64_t kLanes = 16;  // channels a transform carries at once (two AVX2 registers)
constexpr size_t kAlign = 64;

// G (6x3), which carries a 3x3 filter g into the transformed space (G g Gt): its rows, the points 0, 1,
// -1, 2, -2 and infinity scaled.
inline constexpr float kG[kAlpha][3] = {{0.25f, 0, 0},
                                        {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                        {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                        {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                        {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                        {0, 0, 1}};

inline size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// The transforms run on 16 channels at once; built for AVX2 + FMA too (the function picked at load time
// by the CPU), as fastnn's binaries are built for any x86-64.
#if defined(__x86_64__) && defined(__GNUC__)
#define FASTNN_WINOGRAD_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define FASTNN_WINOGRAD_CLONES
#endif

// One tile's 6x6 input block d (rows from row0, columns from col0 of one [H, W, C] image, zero where the
// block leaves it), channels [c0, c0 + 16), into V = Bt d B at v[pos * pos_stride + lane]. Lanes past the
// channels: zeros when `every_lane`, else not written.
void input_tile(const float* image, const WinogradShape& s, int64_t row0, int64_t col0, int64_t c0, float* v,
                int64_t pos_stride, bool every_lane);

// The gradient of one tile's 4x4 outputs (rows from row0, columns from col0 of one [P, Q, K] output
// gradient, zero where the tile leaves it: those outputs are not the convolution's), channels
// [k0, k0 + 16), carried into the transformed space as the forward's At M A is carried back: A dy At,
// at m[pos * pos_stride + lane], every lane (zeros past the channels).
void output_gradient_tile(const float* dy_image, const WinogradShape& s, int64_t row0, int64_t col0, int64_t k0,
                          float* m, int64_t pos_stride);

// Up to 6 rows of 16 products: out[r * ldo + [0, 16)] = (out's if `accumulate`) + the sum over i < n of
// a[r * a_row + i * a_step] * b[i * b_step + [0, 16)], for r < rows (<= 6). AVX2 + FMA: the twelve sums
// stay in registers across n.
void six_rows_of_sixteen(const float* a, int64_t rows, int64_t a_row, int64_t a_step, const float* b, int64_t b_step,
                         int64_t n, float* out, int64_t ldo, bool accumulate);

}  // namespace fastnn::ops::cpu::f43
