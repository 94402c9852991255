#include "trainer/ops/winograd_f43_tiles.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/check.h"

namespace fastnn::ops::cpu::f43 {

FASTNN_WINOGRAD_CLONES
void input_tile(const float* image, const WinogradShape& s, int64_t row0, int64_t col0, int64_t c0, float* v,
                int64_t pos_stride, bool every_lane) {
  const int64_t lanes = std::min(kLanes, s.c - c0);
  float d[kAlpha][kAlpha][kLanes];
  for (int64_t i = 0; i < kAlpha; ++i) {
    const int64_t row = row0 + i;
    for (int64_t j = 0; j < kAlpha; ++j) {
      const int64_t col = col0 + j;
      float* dst = d[i][j];
      if (row < 0 || row >= s.h || col < 0 || col >= s.w) {
        for (int64_t l = 0; l < kLanes; ++l) dst[l] = 0.0f;
        continue;
      }
      const float* src = image + (row * s.w + col) * s.c + c0;
      if (lanes == kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) dst[l] = src[l];
      } else {
        for (int64_t l = 0; l < kLanes; ++l) dst[l] = l < lanes ? src[l] : 0.0f;
      }
    }
  }
  // Bt's rows (points 0, 1, -1, 2, -2 and infinity), first down the columns, then along the rows.
  float t[kAlpha][kAlpha][kLanes];
  for (int64_t j = 0; j < kAlpha; ++j) {
    for (int64_t l = 0; l < kLanes; ++l) {
      const float d0 = d[0][j][l], d1 = d[1][j][l], d2 = d[2][j][l], d3 = d[3][j][l], d4 = d[4][j][l], d5 = d[5][j][l];
      t[0][j][l] = 4.0f * d0 - 5.0f * d2 + d4;
      t[1][j][l] = -4.0f * (d1 + d2) + d3 + d4;
      t[2][j][l] = 4.0f * (d1 - d2) - d3 + d4;
      t[3][j][l] = 2.0f * (d3 - d1) - d2 + d4;
      t[4][j][l] = 2.0f * (d1 - d3) - d2 + d4;
      t[5][j][l] = 4.0f * d1 - 5.0f * d3 + d5;
    }
  }
  const int64_t written = every_lane ? kLanes : lanes;
  for (int64_t i = 0; i < kAlpha; ++i) {
    float out[kAlpha][kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      const float d0 = t[i][0][l], d1 = t[i][1][l], d2 = t[i][2][l], d3 = t[i][3][l], d4 = t[i][4][l], d5 = t[i][5][l];
      out[0][l] = 4.0f * d0 - 5.0f * d2 + d4;
      out[1][l] = -4.0f * (d1 + d2) + d3 + d4;
      out[2][l] = 4.0f * (d1 - d2) - d3 + d4;
      out[3][l] = 2.0f * (d3 - d1) - d2 + d4;
      out[4][l] = 2.0f * (d1 - d3) - d2 + d4;
      out[5][l] = 4.0f * d1 - 5.0f * d3 + d5;
    }
    for (int64_t j = 0; j < kAlpha; ++j) {
      float* dst = v + (i * kAlpha + j) * pos_stride;
      for (int64_t l = 0; l < written; ++l) dst[l] = out[j][l];
    }
  }
}

FASTNN_WINOGRAD_CLONES
void output_gradient_tile(const float* dy_image, const WinogradShape& s, int64_t row0, int64_t col0, int64_t k0,
                          float* m, int64_t pos_stride) {
  const int64_t lanes = std::min(kLanes, s.k - k0);
  float g[4][4][kLanes];
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t row = row0 + i, col = col0 + j;
      float* dst = g[i][j];
      if (row >= s.p || col >= s.q) {
        for (int64_t l = 0; l < kLanes; ++l) dst[l] = 0.0f;
        continue;
      }
      const float* src = dy_image + (row * s.q + col) * s.k + k0;
      for (int64_t l = 0; l < kLanes; ++l) dst[l] = l < lanes ? src[l] : 0.0f;
    }
  // A = At's transpose (6x4), rows (1, 0, 0, 0), (1, 1, 1, 1), (1, -1, 1, -1), (1, 2, 4, 8), (1, -2, 4, -8),
  // (0, 0, 0, 1): first down the columns, then along the rows.
  float t[kAlpha][4][kLanes];
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t l = 0; l < kLanes; ++l) {
      const float g0 = g[0][j][l], g1 = g[1][j][l], g2 = g[2][j][l], g3 = g[3][j][l];
      const float even = g0 + g2, odd = g1 + g3, even4 = g0 + 4.0f * g2, odd4 = 2.0f * g1 + 8.0f * g3;
      t[0][j][l] = g0;
      t[1][j][l] = even + odd;
      t[2][j][l] = even - odd;
      t[3][j][l] = even4 + odd4;
      t[4][j][l] = even4 - odd4;
      t[5][j][l] = g3;
    }
  for (int64_t i = 0; i < kAlpha; ++i) {
    float out[kAlpha][kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      const float g0 = t[i][0][l], g1 = t[i][1][l], g2 = t[i][2][l], g3 = t[i][3][l];
      const float even = g0 + g2, odd = g1 + g3, even4 = g0 + 4.0f * g2, odd4 = 2.0f * g1 + 8.0f * g3;
      out[0][l] = g0;
      out[1][l] = even + odd;
      out[2][l] = even - odd;
      out[3][l] = even4 + odd4;
      out[4][l] = even4 - odd4;
      out[5][l] = g3;
    }
    for (int64_t j = 0; j < kAlpha; ++j) {
      float* dst = m + (i * kAlpha + j) * pos_stride;
      for (int64_t l = 0; l < kLanes; ++l) dst[l] = out[j][l];
    }
  }
}

#if defined(__x86_64__)
// The twelve sums named one by one: as an array GCC 12 stored them on every step. Rows past `rows` read
// the last row again (their sums are not stored), so that no address past the operand is read.
__attribute__((target("avx2,fma"))) void six_rows_of_sixteen(const float* a, int64_t rows, int64_t a_row,
                                                             int64_t a_step, const float* b, int64_t b_step, int64_t n,
                                                             float* out, int64_t ldo, bool accumulate) {
  FASTNN_CHECK(rows >= 1 && rows <= 6, "winograd: 1 to 6 rows of products, not ", rows);
  __m256 acc[12];
  for (int64_t r = 0; r < 6; ++r) {
    const bool load = accumulate && r < rows;
    acc[2 * r] = load ? _mm256_loadu_ps(out + r * ldo) : _mm256_setzero_ps();
    acc[2 * r + 1] = load ? _mm256_loadu_ps(out + r * ldo + 8) : _mm256_setzero_ps();
  }
  __m256 a0 = acc[0], b0 = acc[1], a1 = acc[2], b1 = acc[3], a2 = acc[4], b2 = acc[5], a3 = acc[6], b3 = acc[7],
         a4 = acc[8], b4 = acc[9], a5 = acc[10], b5 = acc[11];
  auto row = [&](int64_t r) { return a + std::min(r, rows - 1) * a_row; };
  const float *r0 = row(0), *r1 = row(1), *r2 = row(2), *r3 = row(3), *r4 = row(4), *r5 = row(5);
  for (int64_t i = 0; i < n; ++i) {
    const float* bi = b + i * b_step;
    const int64_t at = i * a_step;
    const __m256 lo = _mm256_loadu_ps(bi), hi = _mm256_loadu_ps(bi + 8);
    __m256 x = _mm256_broadcast_ss(r0 + at);
    a0 = _mm256_fmadd_ps(x, lo, a0);
    b0 = _mm256_fmadd_ps(x, hi, b0);
    x = _mm256_broadcast_ss(r1 + at);
    a1 = _mm256_fmadd_ps(x, lo, a1);
    b1 = _mm256_fmadd_ps(x, hi, b1);
    x = _mm256_broadcast_ss(r2 + at);
    a2 = _mm256_fmadd_ps(x, lo, a2);
    b2 = _mm256_fmadd_ps(x, hi, b2);
    x = _mm256_broadcast_ss(r3 + at);
    a3 = _mm256_fmadd_ps(x, lo, a3);
    b3 = _mm256_fmadd_ps(x, hi, b3);
    x = _mm256_broadcast_ss(r4 + at);
    a4 = _mm256_fmadd_ps(x, lo, a4);
    b4 = _mm256_fmadd_ps(x, hi, b4);
    x = _mm256_broadcast_ss(r5 + at);
    a5 = _mm256_fmadd_ps(x, lo, a5);
    b5 = _mm256_fmadd_ps(x, hi, b5);
  }
  const __m256 sums[12] = {a0, b0, a1, b1, a2, b2, a3, b3, a4, b4, a5, b5};
  for (int64_t r = 0; r < rows; ++r) {
    _mm256_storeu_ps(out + r * ldo, sums[2 * r]);
    _mm256_storeu_ps(out + r * ldo + 8, sums[2 * r + 1]);
  }
}
#else
void six_rows_of_sixteen(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t,
                         bool) {
  FASTNN_CHECK(false, "winograd: x86-64 only");
}
#endif

}  // namespace fastnn::ops::cpu::f43
