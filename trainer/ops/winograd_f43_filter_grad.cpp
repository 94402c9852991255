// WinogradF43::filter_gradient: blocks of tiles carried into the transformed space (the input as the
// forward carries it, V = Bt d B; the output gradient as A dy At), the products of the two summed over
// the tiles into dU [36][K][C] block after block, then dU carried back to the 3x3 filters: dw = Gt dU G.
#include <algorithm>

#include <tbb/parallel_for.h>

#include "trainer/ops/winograd_f43.h"
#include "trainer/ops/winograd_f43_tiles.h"

namespace fastnn::ops::cpu {
namespace {

using f43::kAlpha;
using f43::kLanes;
using f43::kPositions;

// Floats of one block's transformed output gradient per position plus one 16-channel strip of its
// transformed input: what one product task reads again for every 6 output channels, kept within a
// core's L2 (512 KB on zen3, 1 MB on zen5). The blocks are of equal size, so that few tiles do not make a
// block of their own (each block reads and writes all of dU again).
constexpr int64_t kGradBlockFloats = 64 * 1024;
constexpr int64_t kGradMinBlockTiles = 48;

struct GradLayout {
  int64_t cp, kp;  // C and K rounded up to 16 lanes
  int64_t tiles;   // per block
  size_t v_bytes, m_bytes, du_bytes;
};

GradLayout grad_layout(const WinogradShape& s, int64_t block_tiles) {
  GradLayout g{.cp = f43::round_up(s.c, kLanes), .kp = f43::round_up(s.k, kLanes), .tiles = block_tiles};
  g.v_bytes = f43::aligned(sizeof(float) * kPositions * block_tiles * g.cp);
  g.m_bytes = f43::aligned(sizeof(float) * kPositions * block_tiles * g.kp);
  g.du_bytes = f43::aligned(sizeof(float) * kPositions * g.kp * g.cp);
  return g;
}

// dw[k][c] = Gt dU[.][k][c] G for 16 input channels [c0, c0 + 16) of one output channel k.
FASTNN_WINOGRAD_CLONES
void filter_tile(const float* du, const GradLayout& g, const WinogradShape& s, int64_t k, int64_t c0, float* dw) {
  const int64_t lanes = std::min(kLanes, s.c - c0);
  float gt_du[3][kAlpha][kLanes];  // Gt dU
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t j = 0; j < kAlpha; ++j)
      for (int64_t l = 0; l < kLanes; ++l) {
        float sum = 0.0f;
        for (int64_t i = 0; i < kAlpha; ++i) sum += f43::kG[i][a] * du[((i * kAlpha + j) * g.kp + k) * g.cp + c0 + l];
        gt_du[a][j][l] = sum;
      }
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 3; ++b) {
      float out[kLanes];
      for (int64_t l = 0; l < kLanes; ++l) {
        float sum = 0.0f;
        for (int64_t j = 0; j < kAlpha; ++j) sum += gt_du[a][j][l] * f43::kG[j][b];
        out[l] = sum;
      }
      for (int64_t l = 0; l < lanes; ++l) dw[((k * s.c + c0 + l) * 3 + a) * 3 + b] = out[l];
    }
}

}  // namespace

int64_t WinogradF43::grad_block_tiles() const {
  const int64_t per_tile = f43::round_up(s_.k, kLanes) + kLanes;
  const int64_t most = std::max(kGradMinBlockTiles, kGradBlockFloats / per_tile);
  return f43::ceil_div(tiles_, f43::ceil_div(tiles_, most));
}

size_t WinogradF43::filter_gradient_workspace_bytes() const {
  const GradLayout g = grad_layout(s_, grad_block_tiles());
  return g.v_bytes + g.m_bytes + g.du_bytes;
}

void WinogradF43::filter_gradient(const float* x, const float* dy, float* dw, std::byte* scratch) const {
  const GradLayout g = grad_layout(s_, grad_block_tiles());
  float* v = reinterpret_cast<float*>(scratch);                              // [36][tiles][cp]
  float* m = reinterpret_cast<float*>(scratch + g.v_bytes);                  // [36][tiles][kp]
  float* du = reinterpret_cast<float*>(scratch + g.v_bytes + g.m_bytes);     // [36][kp][cp]
  const int64_t per_image = tiles_h_ * tiles_w_, c_panels = g.cp / kLanes;
  for (int64_t t0 = 0; t0 < tiles_; t0 += g.tiles) {
    const int64_t tb = std::min(g.tiles, tiles_ - t0);
    tbb::parallel_for(int64_t{0}, tb, [&](int64_t t) {
      const int64_t tile = t0 + t, image = tile / per_image, in_image = tile % per_image;
      const int64_t row0 = (in_image / tiles_w_) * 4, col0 = (in_image % tiles_w_) * 4;
      const float* img = x + image * s_.h * s_.w * s_.c;
      for (int64_t c0 = 0; c0 < s_.c; c0 += kLanes)
        f43::input_tile(img, s_, row0 - s_.pad_top, col0 - s_.pad_left, c0, v + t * g.cp + c0, tb * g.cp,
                        /*every_lane=*/true);
      const float* grad = dy + image * s_.p * s_.q * s_.k;
      for (int64_t k0 = 0; k0 < s_.k; k0 += kLanes)
        f43::output_gradient_tile(grad, s_, row0, col0, k0, m + t * g.kp + k0, tb * g.kp);
    });
    // dU[pos][k][c] (+)= sum over the block's tiles of M[pos][t][k] * V[pos][t][c]: one task per position and
    // strip of 16 input channels, 6 output channels at a time, each sum in registers over all the tiles.
    tbb::parallel_for(int64_t{0}, kPositions * c_panels, [&](int64_t job) {
      const int64_t pos = job / c_panels, c0 = (job % c_panels) * kLanes;
      const float* m_pos = m + pos * tb * g.kp;
      const float* v_strip = v + pos * tb * g.cp + c0;
      float* du_pos = du + pos * g.kp * g.cp + c0;
      for (int64_t k0 = 0; k0 < s_.k; k0 += 6)
        f43::six_rows_of_sixteen(m_pos + k0, std::min<int64_t>(6, s_.k - k0), /*a_row=*/1, /*a_step=*/g.kp, v_strip,
                                 /*b_step=*/g.cp, tb, du_pos + k0 * g.cp, g.cp, /*accumulate=*/t0 > 0);
    });
  }
  const int64_t c_chunks = f43::ceil_div(s_.c, kLanes);
  tbb::parallel_for(int64_t{0}, s_.k * c_chunks, [&](int64_t job) {
    filter_tile(du, g, s_, job / c_chunks, (job % c_chunks) * kLanes, dw);
  });
}

}  // namespace fastnn::ops::cpu
