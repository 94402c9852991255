#include "trainer/ops/winograd_f43.h"

#include <algorithm>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "trainer/ops/blas_core.h"
#include "trainer/ops/winograd_f43_tiles.h"
#include "core/check.h"

namespace fastnn::ops::cpu {
namespace {

using f43::ceil_div;
using f43::kAlpha;
using f43::kLanes;
using f43::kPositions;
// Tiles a worker carries through the transforms and products at a time: their transformed inputs and
// products stay in the core's caches. ResNet-50's 3x3 layers at batch 1, 8 and 32 (AVX2, 2 threads): 64
// within noise of the fastest of 16, 32, 64, 128 and 256 at every shape but one (C = 128 at 28x28,
// batch 32: 128 was 10% faster).
constexpr int64_t kF43BlockTiles = 64;

// The transformed weights are kept in panels of 16 output channels ([36][K / 16][C][16], K rounded up
// with zeros), the order the products read them in: no copy of them per product, as a BLAS's packing
// makes (OpenBLAS's took as long as its multiplications at batch 1).
constexpr int64_t kF43Panel = 16;

int64_t f43_panels(int64_t k) { return ceil_div(k, kF43Panel); }

#if defined(__x86_64__)
// 6 x 16 products m[r][0..16) = sum over c of v[r][c] * panel[c][0..16): twelve accumulators held in
// registers across C (AVX2 + FMA), named one by one: as an array GCC 12 stored them on every step.
__attribute__((target("avx2,fma"))) void f43_six_rows_by_panel(const float* v, int64_t ldv, const float* panel,
                                                                int64_t c, float* m, int64_t ldm) {
  __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0, a4 = a0, b4 = a0,
         a5 = a0, b5 = a0;
  const float *v0 = v, *v1 = v + ldv, *v2 = v + 2 * ldv, *v3 = v + 3 * ldv, *v4 = v + 4 * ldv, *v5 = v + 5 * ldv;
  for (int64_t i = 0; i < c; ++i) {
    const __m256 lo = _mm256_loadu_ps(panel + i * kF43Panel), hi = _mm256_loadu_ps(panel + i * kF43Panel + 8);
    __m256 x = _mm256_broadcast_ss(v0 + i);
    a0 = _mm256_fmadd_ps(x, lo, a0);
    b0 = _mm256_fmadd_ps(x, hi, b0);
    x = _mm256_broadcast_ss(v1 + i);
    a1 = _mm256_fmadd_ps(x, lo, a1);
    b1 = _mm256_fmadd_ps(x, hi, b1);
    x = _mm256_broadcast_ss(v2 + i);
    a2 = _mm256_fmadd_ps(x, lo, a2);
    b2 = _mm256_fmadd_ps(x, hi, b2);
    x = _mm256_broadcast_ss(v3 + i);
    a3 = _mm256_fmadd_ps(x, lo, a3);
    b3 = _mm256_fmadd_ps(x, hi, b3);
    x = _mm256_broadcast_ss(v4 + i);
    a4 = _mm256_fmadd_ps(x, lo, a4);
    b4 = _mm256_fmadd_ps(x, hi, b4);
    x = _mm256_broadcast_ss(v5 + i);
    a5 = _mm256_fmadd_ps(x, lo, a5);
    b5 = _mm256_fmadd_ps(x, hi, b5);
  }
  const __m256 out[12] = {a0, b0, a1, b1, a2, b2, a3, b3, a4, b4, a5, b5};
  for (int r = 0; r < 6; ++r) {
    _mm256_storeu_ps(m + r * ldm, out[2 * r]);
    _mm256_storeu_ps(m + r * ldm + 8, out[2 * r + 1]);
  }
}

// m [rows][panels * 16] = v [rows][C] x the panels, 6 rows at a time; the last rows through a copy
// padded with zero rows (`pad`: 6 x C floats).
__attribute__((target("avx2,fma"))) void f43_products(const float* v, int64_t rows, int64_t c, const float* panels,
                                                      int64_t panel_count, float* m, int64_t ldm, float* pad) {
  const int64_t whole = rows / 6 * 6, rest = rows - whole;
  if (rest > 0) {
    std::copy(v + whole * c, v + rows * c, pad);
    std::fill(pad + rest * c, pad + 6 * c, 0.0f);
  }
  for (int64_t j = 0; j < panel_count; ++j) {
    const float* panel = panels + j * c * kF43Panel;
    float* mj = m + j * kF43Panel;
    for (int64_t r = 0; r < whole; r += 6) f43_six_rows_by_panel(v + r * c, c, panel, c, mj + r * ldm, ldm);
    if (rest == 0) continue;
    float last[6 * kF43Panel];
    f43_six_rows_by_panel(pad, c, panel, c, last, kF43Panel);
    for (int64_t r = 0; r < rest; ++r) std::copy(last + r * kF43Panel, last + (r + 1) * kF43Panel, mj + (whole + r) * ldm);
  }
}
#else
void f43_products(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, float*) {
  FASTNN_CHECK(false, "winograd: x86-64 only");
}
#endif

// One tile's products M (m[pos * pos_stride + lane], output channels [k0, k0 + lanes)) back to its 4x4
// outputs Y = At M A, plus the bias and the tail, written where they fall inside the output.
FASTNN_WINOGRAD_CLONES
void output_tile(const float* m, int64_t pos_stride, int64_t lanes, const WinogradShape& s, int64_t image,
                 int64_t row0, int64_t col0, int64_t k0, const float* bias, const float* residual, WinogradTail tail,
                 float* y) {
  float mm[kAlpha][kAlpha][kLanes];
  for (int64_t pos = 0; pos < kPositions; ++pos) {
    const float* src = m + pos * pos_stride;
    float* dst = mm[pos / kAlpha][pos % kAlpha];
    for (int64_t l = 0; l < kLanes; ++l) dst[l] = l < lanes ? src[l] : 0.0f;
  }
  // At's rows: y0 = m0+m1+m2+m3+m4, y1 = m1-m2+2(m3-m4), y2 = m1+m2+4(m3+m4), y3 = m1-m2+8(m3-m4)+m5.
  float t[4][kAlpha][kLanes];
  for (int64_t j = 0; j < kAlpha; ++j) {
    for (int64_t l = 0; l < kLanes; ++l) {
      const float a = mm[1][j][l] + mm[2][j][l], b = mm[1][j][l] - mm[2][j][l];
      const float c = mm[3][j][l] + mm[4][j][l], e = mm[3][j][l] - mm[4][j][l];
      t[0][j][l] = mm[0][j][l] + a + c;
      t[1][j][l] = b + 2.0f * e;
      t[2][j][l] = a + 4.0f * c;
      t[3][j][l] = b + 8.0f * e + mm[5][j][l];
    }
  }
  float b_k[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) b_k[l] = l < lanes ? bias[k0 + l] : 0.0f;
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t row = row0 + i;
    if (row >= s.p) break;
    float out[4][kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      const float a = t[i][1][l] + t[i][2][l], b = t[i][1][l] - t[i][2][l];
      const float c = t[i][3][l] + t[i][4][l], e = t[i][3][l] - t[i][4][l];
      out[0][l] = t[i][0][l] + a + c + b_k[l];
      out[1][l] = b + 2.0f * e + b_k[l];
      out[2][l] = a + 4.0f * c + b_k[l];
      out[3][l] = b + 8.0f * e + t[i][5][l] + b_k[l];
    }
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t col = col0 + j;
      if (col >= s.q) break;
      const int64_t at = ((image * s.p + row) * s.q + col) * s.k + k0;
      float* dst = y + at;
      const float* o = out[j];
      switch (tail) {
        case WinogradTail::kNone:
          for (int64_t l = 0; l < lanes; ++l) dst[l] = o[l];
          break;
        case WinogradTail::kRelu:
          for (int64_t l = 0; l < lanes; ++l) dst[l] = std::max(o[l], 0.0f);
          break;
        case WinogradTail::kRelu6:
          for (int64_t l = 0; l < lanes; ++l) dst[l] = std::min(std::max(o[l], 0.0f), 6.0f);
          break;
        case WinogradTail::kAddRelu:
          for (int64_t l = 0; l < lanes; ++l) dst[l] = std::max(o[l] + residual[at + l], 0.0f);
          break;
      }
    }
  }
}

// G (6x3): rows (1/4, 0, 0), (-1/6, -1/6, -1/6), (-1/6, 1/6, -1/6), (1/24, 1/12, 1/6), (1/24, -1/12, 1/6),
// (0, 0, 1); U = G f Gt for 16 output channels at once (one panel), in f32. `flipped`: the filters of
// the backward-data convolution, out channel o and in channel i taking kcrs[i][o] turned by 180 degrees.
FASTNN_WINOGRAD_CLONES
void transform_panel(const float* kcrs, int64_t outs, int64_t ins, bool flipped, int64_t panel, int64_t in,
                     int64_t panels, float* u) {
  const auto& g = f43::kG;
  float f[9][kF43Panel];
  for (int64_t l = 0; l < kF43Panel; ++l) {
    const int64_t out = panel * kF43Panel + l;
    for (int64_t rs = 0; rs < 9; ++rs) {
      if (out >= outs) {
        f[rs][l] = 0.0f;
      } else {
        f[rs][l] = flipped ? kcrs[(in * outs + out) * 9 + (8 - rs)] : kcrs[(out * ins + in) * 9 + rs];
      }
    }
  }
  float gf[kAlpha][3][kF43Panel];  // G f
  for (int64_t i = 0; i < kAlpha; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t l = 0; l < kF43Panel; ++l) gf[i][j][l] = g[i][0] * f[j][l] + g[i][1] * f[3 + j][l] + g[i][2] * f[6 + j][l];
  for (int64_t i = 0; i < kAlpha; ++i)
    for (int64_t j = 0; j < kAlpha; ++j) {
      float* dst = u + (((i * kAlpha + j) * panels + panel) * ins + in) * kF43Panel;
      for (int64_t l = 0; l < kF43Panel; ++l) dst[l] = gf[i][0][l] * g[j][0] + gf[i][1][l] * g[j][1] + gf[i][2][l] * g[j][2];
    }
}

void transform_filters(const float* kcrs, int64_t outs, int64_t ins, bool flipped, float* u) {
  const int64_t panels = f43_panels(outs);
  tbb::parallel_for(int64_t{0}, panels * ins, [&](int64_t job) {
    transform_panel(kcrs, outs, ins, flipped, job / ins, job % ins, panels, u);
  });
}

}  // namespace

WinogradF43::WinogradF43(const WinogradShape& s) : s_(s) {
  FASTNN_CHECK(this_cpu_features().avx2_fma, "winograd: needs a CPU with AVX2 and FMA");
  tiles_h_ = ceil_div(s.p, 4);
  tiles_w_ = ceil_div(s.q, 4);
  tiles_ = s.n * tiles_h_ * tiles_w_;
  block_tiles_ = std::min<int64_t>(tiles_, kF43BlockTiles);
  const int64_t blocks = ceil_div(tiles_, block_tiles_);
  const int64_t threads = tbb::this_task_arena::max_concurrency();
  // Too few tile blocks to keep every thread busy: the output channels are split too (each part
  // transforms its block's inputs again, a few percent of its multiplications).
  k_chunk_ = f43_panels(s.k) * kF43Panel;
  while (blocks * ceil_div(s.k, k_chunk_) < 2 * threads && k_chunk_ > 64) k_chunk_ = f43_panels(k_chunk_ / 2) * kF43Panel;
  // As many scratch blocks as workers that can have a task at once.
  slots_ = std::min(threads, blocks * ceil_div(s.k, k_chunk_));
}

size_t WinogradF43::weights_floats(int64_t k, int64_t c) {
  return static_cast<size_t>(kPositions * c * f43_panels(k) * kF43Panel);
}

void WinogradF43::transform_weights(const float* kcrs, int64_t k, int64_t c, float* u) {
  transform_filters(kcrs, k, c, /*flipped=*/false, u);
}

void WinogradF43::transform_flipped_weights(const float* kcrs, int64_t k, int64_t c, float* u) {
  transform_filters(kcrs, c, k, /*flipped=*/true, u);
}

size_t WinogradF43::slot_bytes() const {
  // [V: 36 x tiles x C][M: 36 x tiles x output channels][6 rows of V padded with zero rows]
  return f43::aligned(sizeof(float) * kPositions * block_tiles_ * s_.c) +
         f43::aligned(sizeof(float) * kPositions * block_tiles_ * k_chunk_) + f43::aligned(sizeof(float) * 6 * s_.c);
}

size_t WinogradF43::workspace_bytes() const {
  return static_cast<size_t>(slots_) * slot_bytes();
}

void WinogradF43::forward(const float* x, const float* u, const float* bias, const float* residual, WinogradTail tail,
                          float* y, std::byte* scratch) const {
  const int64_t tasks = ceil_div(tiles_, block_tiles_) * ceil_div(s_.k, k_chunk_);
  // Each worker takes every slots_-th task, with its own scratch.
  tbb::parallel_for(int64_t{0}, slots_, [&](int64_t slot) {
    std::byte* own = scratch + static_cast<size_t>(slot) * slot_bytes();
    for (int64_t task = slot; task < tasks; task += slots_) run_task(task, x, u, bias, residual, tail, y, own);
  });
}

void WinogradF43::run_task(int64_t task, const float* x, const float* u, const float* bias, const float* residual,
                           WinogradTail tail, float* y, std::byte* scratch) const {
  const size_t v_bytes = f43::aligned(sizeof(float) * kPositions * block_tiles_ * s_.c);
  const size_t m_bytes = f43::aligned(sizeof(float) * kPositions * block_tiles_ * k_chunk_);
  float* v = reinterpret_cast<float*>(scratch);
  float* m = reinterpret_cast<float*>(scratch + v_bytes);
  float* pad = reinterpret_cast<float*>(scratch + v_bytes + m_bytes);
  const int64_t k_chunks = ceil_div(s_.k, k_chunk_), per_image = tiles_h_ * tiles_w_;
  const int64_t block = task / k_chunks, k0 = (task % k_chunks) * k_chunk_;
  const int64_t t0 = block * block_tiles_, tb = std::min(block_tiles_, tiles_ - t0);
  const int64_t kc = std::min(k_chunk_, s_.k - k0);
  // V: [36][tb][C]
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t tile = t0 + t, image = tile / per_image, in_image = tile % per_image;
    const int64_t row0 = (in_image / tiles_w_) * 4 - s_.pad_top, col0 = (in_image % tiles_w_) * 4 - s_.pad_left;
    const float* img = x + image * s_.h * s_.w * s_.c;
    for (int64_t c0 = 0; c0 < s_.c; c0 += kLanes) f43::input_tile(img, s_, row0, col0, c0, v + t * s_.c + c0, tb * s_.c, false);
  }
  // M: [36][tb][kc rounded up to panels] = V[pos] x U[pos]'s panels of channels [k0, k0 + kc)
  const int64_t panels = f43_panels(kc), ldm = panels * kF43Panel;
  for (int64_t pos = 0; pos < kPositions; ++pos)
    f43_products(v + pos * tb * s_.c, tb, s_.c, u + (pos * f43_panels(s_.k) + k0 / kF43Panel) * s_.c * kF43Panel,
                 panels, m + pos * tb * ldm, ldm, pad);
  for (int64_t t = 0; t < tb; ++t) {
    const int64_t tile = t0 + t, image = tile / per_image, in_image = tile % per_image;
    const int64_t row0 = (in_image / tiles_w_) * 4, col0 = (in_image % tiles_w_) * 4;
    for (int64_t kk = 0; kk < kc; kk += kLanes)
      output_tile(m + t * ldm + kk, tb * ldm, std::min(kLanes, kc - kk), s_, image, row0, col0, k0 + kk, bias,
                  residual, tail, y);
  }
}

}  // namespace fastnn::ops::cpu
