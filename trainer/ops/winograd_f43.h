// A 3x3, stride-1 convolution of NHWC f32 activations as Winograd's F(4x4, 3x3), its three passes, for
// CPUs where oneDNN has no Winograd convolution of its own (oneDNN 2.6: none before AVX-512).
//
// Each 4x4 block of output pixels ("tile") is computed from the 6x6 block of input around it: the input
// block and the 3x3 filter are carried into a 6x6 "transformed" space (V = Bt d B, U = G g Gt) where the
// convolution is an element-wise product, summed over input channels: for each of the 36 positions a
// matrix product [tiles, C] x [C, K], then carried back (Y = At M A). 36 multiply-adds per 16 outputs
// instead of 144: 4x fewer; the transforms cost a few additions per element. AVX2 + FMA only (the
// products are register-blocked for them); measured beside oneDNN's direct convolution in
// conv2d_descs_dnnl.cpp.
//
// The rounding differs from a direct convolution's (the transforms' constants 1/4, 1/6, 1/24 and
// sums of up to 36 terms), within f32's: ops_winograd_cpu_test holds it to the reference kernel.
// The filter gradient is the forward's adjoint in the same space: per tile the output gradient carried
// in (A dy At) times the transformed input (V), summed over the tiles for each of the 36 positions (a
// matrix product [K, tiles] x [tiles, C]) and carried back to 3x3 (Gt dU G).
// At a fixed thread count the same inputs give the same bits (each output is one task's, summed in a fixed
// order); the filter gradient's bits do not depend on the thread count at all.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastnn::ops::cpu {

// What follows the convolution and its bias, per output element.
enum class WinogradTail { kNone, kRelu, kRelu6, kAddRelu };

struct WinogradShape {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input [N, H, W, C]
  int64_t k = 0, p = 0, q = 0;         // output [N, P, Q, K]
  int64_t pad_top = 0, pad_left = 0;   // the bottom and right padding follow from P and Q
};

class WinogradF43 {
 public:
  // Throws on a CPU without AVX2 and FMA.
  explicit WinogradF43(const WinogradShape& s);

  // Filters [K, C, 3, 3] (fastnn's layout) into the transformed space: u of weights_floats(k, c), [36]
  // [K / 16][C][16] (K rounded up with zeros).
  static size_t weights_floats(int64_t k, int64_t c);
  static void transform_weights(const float* kcrs, int64_t k, int64_t c, float* u);
  // The same filters as those of the convolution that carries an output gradient [N, P, Q, K] back to
  // the input's [N, H, W, C] (each turned by 180 degrees, in and out channels swapped; padding 2 - the
  // forward's): u of weights_floats(c, k).
  static void transform_flipped_weights(const float* kcrs, int64_t k, int64_t c, float* u);

  // Bytes of scratch forward() needs: one block of transformed inputs and products per worker thread.
  size_t workspace_bytes() const;

  // y [N, P, Q, K] = tail(conv(x, weights) + bias); `residual` ([N, P, Q, K]) only for kAddRelu, added
  // before the relu. `u` from transform_weights, `scratch` of workspace_bytes().
  void forward(const float* x, const float* u, const float* bias, const float* residual, WinogradTail tail,
               float* y, std::byte* scratch) const;

  // Bytes of scratch filter_gradient() needs.
  size_t filter_gradient_workspace_bytes() const;
  // dw [K, C, 3, 3] = the gradient of the filters from the forward's input x [N, H, W, C] and the output
  // gradient dy [N, P, Q, K] (written, not added to).
  void filter_gradient(const float* x, const float* dy, float* dw, std::byte* scratch) const;

 private:
  size_t slot_bytes() const;  // one worker's scratch
  int64_t grad_block_tiles() const;  // tiles the filter gradient carries into the transformed space at a time
  // One block of tiles and chunk of output channels, with the worker's `scratch`.
  void run_task(int64_t task, const float* x, const float* u, const float* bias, const float* residual,
                WinogradTail tail, float* y, std::byte* scratch) const;

  WinogradShape s_;
  int64_t tiles_h_, tiles_w_, tiles_;  // 4x4 output tiles per image row / column, in the batch
  int64_t block_tiles_;                // tiles a worker transforms and multiplies at a time
  int64_t k_chunk_;                    // output channels a worker multiplies at a time
  int64_t slots_;                      // workers, each with a scratch block
};

}  // namespace fastnn::ops::cpu
