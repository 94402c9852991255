// drop_path: NASNet's per-example path dropout (TF-slim nasnet_utils drop_path + _apply_drop_path,
// drop_connect_version "v3"). In training each example n of x [N, ...] is kept whole, scaled by
// 1 / keep, or zeroed whole; in eval y = x.
//
//   inputs x [N, ...]; outputs y (same shape); saved scale (f32 [N]: 1 / keep or 0; training only)
// Attributes:
//   keep_prob    (0, 1], default 1: the net's drop_path_keep_prob
//   cell_index   >= 0, default 0: the cell's number counting stem cells (TF-slim's cell_num)
//   total_cells  > cell_index, default 1: TF-slim's total_num_cells
//   total_steps  >= 0, default 0: TF-slim's total_training_steps; 0 leaves out the step ramp
// The keep probability of a step (drop_path_keep(), the same double arithmetic on both devices):
//   keep = 1 - (cell_index + 1) / total_cells * (1 - keep_prob)     deeper cells drop more
//   keep = 1 - min(1, step / total_steps) * (1 - keep)             drops ramp up over training
// so step 0 keeps everything. Example n is kept iff philox_word(seed, step, n) >= dropout_threshold(1 -
// keep) (ops/random.h): a pure function of (ForwardArgs::seed, ::step, n), identical on CPU and CUDA.
// Backward: training dx = dy * scale[n]; eval dx = dy.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/host_device.h"
#include "core/host_device_math.h"
#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_drop_path(OpRegistry& registry);

struct DropPathSchedule {
  double keep_prob = 1;
  int64_t cell_index = 0, total_cells = 1, total_steps = 0;
};

// The keep probability at `step` (header comment); 1 when keep_prob is 1.
FASTNN_HD inline double drop_path_keep(const DropPathSchedule& s, uint64_t step) {
  if (s.keep_prob >= 1) return 1;
  const double depth = hd::div(static_cast<double>(s.cell_index + 1), static_cast<double>(s.total_cells));
  double keep = hd::sub(1.0, hd::mul(depth, hd::sub(1.0, s.keep_prob)));
  if (s.total_steps > 0) {
    double ramp = hd::div(static_cast<double>(step), static_cast<double>(s.total_steps));
    if (ramp > 1.0) ramp = 1.0;
    keep = hd::sub(1.0, hd::mul(ramp, hd::sub(1.0, keep)));
  }
  return keep;
}

namespace cpu {
// n examples of `inner` elements each. Training forward writes scale[n] then y = x * scale.
void drop_path_scales(int64_t n, double keep, uint64_t seed, uint64_t step, float* scale);
template <typename T>
void drop_path_apply(int64_t n, int64_t inner, const float* scale, const T* x, T* y);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/drop_path_cuda.cu): the CPU functions' names and arguments plus a stream; T is
// float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
void drop_path_scales(int64_t n, double keep, uint64_t seed, uint64_t step, float* scale, cudaStream_t s);
// The step read from device memory (ForwardArgs::device_step), the keep probability computed on the device.
void drop_path_scales(int64_t n, const DropPathSchedule& schedule, uint64_t seed, const uint64_t* device_step,
                      float* scale, cudaStream_t s);
template <typename T>
void drop_path_apply(int64_t n, int64_t inner, const float* scale, const T* x, T* y, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (drop_path_cuda.cu); register_drop_path adds it.
void register_drop_path_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA

// The attributes checked (ConfigError naming the bad one); shared by the CPU and CUDA factories.
DropPathSchedule drop_path_schedule(const Attrs& a);

}  // namespace fastnn::ops
