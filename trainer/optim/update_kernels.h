// Fused optimizer updates on the GPU: raw device pointers, one launch per parameter (the per-tensor
// launchers) or one launch for every parameter (the chunk-table launchers below). Both apply the rules
// of update_rules.h, the very functions the CPU optimizers run, so an f32 update with grad_scale 1 is
// bitwise the CPU's.
//
// Weights and optimizer state are f32 (the master copy); gradients are f32, f16 or bf16 (G) and are
// multiplied by `grad_scale` as they are read (1 / loss_scale under dynamic loss scaling, times a
// global-norm clipping factor if wanted), which fuses unscaling and clipping into the update.
// Nothing allocates; everything is ordered on `s`. CUDA builds only (update_kernels.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "trainer/optim/tensor_chunks.h"
#include "trainer/optim/update_rules.h"

namespace fastnn::optim::gpu {

// w -= lr * g
template <typename G>
void sgd_update(int64_t count, float lr, float grad_scale, float* w, const G* g, cudaStream_t s);
// a = m * a + g; w -= lr * a   (nesterov: w -= g * lr + a * m * lr)
template <typename G>
void momentum_update(int64_t count, float lr, float momentum, bool nesterov, float grad_scale, float* w, const G* g,
                     float* accum, cudaStream_t s);
// tf.train.AdamOptimizer: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); w -= m lr_t / (sqrt(v) + eps)
// with lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t) computed by the caller (the CPU's begin_step).
template <typename G>
void adam_update(int64_t count, float lr_t, float beta1, float beta2, float epsilon, float grad_scale, float* w,
                 const G* g, float* m, float* v, cudaStream_t s);
// BERT's AdamWeightDecay: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; u = m / (sqrt(v) + eps)
// (+ rate * w when rate != 0); w -= lr * u.
template <typename G>
void adam_weight_decay_update(int64_t count, float lr, float beta1, float beta2, float epsilon, float rate,
                              float grad_scale, float* w, const G* g, float* m, float* v, cudaStream_t s);

// tf.train.RMSPropOptimizer (centered=False): ms += (g^2 - ms)(1 - decay);
// mom = mom momentum + (g lr) / sqrt(ms + eps); w -= mom.
template <typename G>
void rmsprop_update(int64_t count, float lr, float decay, float momentum, float epsilon, float grad_scale, float* w,
                    const G* g, float* ms, float* mom, cudaStream_t s);
// tf.train.AdagradOptimizer: acc += g^2; w -= (g lr) / sqrt(acc).
template <typename G>
void adagrad_update(int64_t count, float lr, float grad_scale, float* w, const G* g, float* accum, cudaStream_t s);
// tf.train.AdadeltaOptimizer: acc = acc rho + g^2 (1 - rho); u = sqrt(up + eps) / sqrt(acc + eps) g;
// w -= u lr; up = up rho + u^2 (1 - rho).
template <typename G>
void adadelta_update(int64_t count, float lr, float rho, float epsilon, float grad_scale, float* w, const G* g,
                     float* accum, float* accum_update, cudaStream_t s);
// TF's ApplyFtrl (no l2 shrinkage), p = lr_power: acc' = acc + g^2;
// linear += g - (acc'^-p - acc^-p) / lr w; w = |linear| > l1 ? (sign(linear) l1 - linear) / (acc'^-p / lr + 2 l2)
// : 0; acc = acc'. lr must be > 0 (the caller checks, as the CPU's begin_step). With lr_power -0.5 (the
// default) the powers are IEEE square roots and the update is bitwise the CPU's; other powers use CUDA's
// powf, within 2 ulp of glibc's, so they are close but not bitwise.
template <typename G>
void ftrl_update(int64_t count, float lr, float lr_power, float l1, float l2, float grad_scale, float* w, const G* g,
                 float* accum, float* linear, cudaStream_t s);

// ---- multi-tensor launches over a chunk table (tensor_chunks.h), with the decision on the device ----
//
// A step is three launches whatever the number of parameters, and nothing is read back to the host:
//   prepare_chunks   g32 = grad * inv_scale + weight_decay * master (chunks flagged kChunkPrepare) and,
//                    with `stats`, each chunk's sum of squares of the finite g32 values and count of the
//                    non-finite ones (in double, a fixed order inside the block: bitwise repeatable)
//   decide_step      one thread: the chunks' totals in chunk order, the global norm, rule::decide (the
//                    scaler's skip and the clipping factor, update_order.h's steps 3-4), adam's lr_t and
//                    beta powers — everything into the device-resident StepControl
//   update_chunks    when the control says apply: every element through the optimizer rule, g32 times
//                    the clipping factor, and the compute-dtype copy of the new weight written alongside
// The next step's loss gradient seed comes from the same control (write_loss_scale), so dynamic loss
// scaling needs no host read either; the host reads the control only when it reports or saves.

struct StepControl {
  double sumsq = 0;      // of the prepared gradients (0 when no statistics were taken)
  double nonfinite = 0;  // count of non-finite gradient elements
  double norm = 0;       // sqrt(sumsq); 0 when not computed
  rule::ScalerState scaler;
  float inv_scale = 1;   // (float)(1 / scaler.scale): what the next preparation multiplies by
  float factor = 1;      // the clipping factor of this step's update
  float lr = 0;          // the rule's lr for this step (adam: lr_t)
  float beta1_power = 0, beta2_power = 0;  // adam (TF's float beta^t)
  int32_t apply = 1;     // 0: the update is skipped (an overflow under dynamic scaling)
};

// The device address of the loss scaler's current scale in a StepControl: what the loss gradient seed is
// made from, and what a classifier head multiplies its gradients by (loss_scale_kernel's factor).
static_assert(std::is_standard_layout_v<StepControl>, "loss_scale_of uses offsetof");
inline const double* loss_scale_of(const StepControl* c) {
  return reinterpret_cast<const double*>(reinterpret_cast<const char*>(c) + offsetof(StepControl, scaler) +
                                         offsetof(rule::ScalerState, scale));
}

struct DecideArgs {
  float lr = 0;
  // Non-null (a step captured into a CUDA graph): the learning rate is read from this device address
  // when the decision runs, so one captured launch serves every step's lr.
  const float* lr_on_device = nullptr;
  bool stats = false;          // prepare_chunks wrote partials for `chunks` chunks
  // With stats: two more totals (sum of squares, non-finite count; device memory) added after the
  // chunks' — a sharded classifier head's rows, summed over the ranks (prepare_rows + an allreduce).
  const double* extra = nullptr;
  double max_norm = 0;         // > 0: clipping
  bool has_scaler = false;     // f16: the scaler's rule decides (static or dynamic)
  rule::ScalerRule scaler;
  bool fixed = false;          // no decision: apply with `fixed_factor` (DeviceOptimizer::step)
  float fixed_factor = 1;
  bool adam = false;           // compute lr_t from the beta powers and advance them when applied
  float beta1 = 0, beta2 = 0;
};

// Device scratch prepare_chunks needs for its statistics: two doubles per chunk.
inline size_t chunk_partials_bytes(int64_t chunks) { return static_cast<size_t>(chunks < 1 ? 1 : chunks) * 2 * sizeof(double); }

template <typename G>
void prepare_chunks(const TensorChunk* table, int64_t chunks, const StepControl* control, bool prepare, bool stats,
                    double* partials, cudaStream_t s);
void decide_step(const double* partials, int64_t chunks, const DecideArgs& args, StepControl* control, cudaStream_t s);
// T: the type of the chunks' `value` (float: no copy is written).
template <typename Rule, typename T>
void update_chunks(const Rule& rule, const TensorChunk* table, int64_t chunks, const StepControl* control, cudaStream_t s);
// ---- the rows of one [rows, len] f32 parameter: a sharded classifier head's (PartialFC's sampled rows) ----
//
// The j-th of `count` selected rows is rule::selected_row(rows, j) of `master` and the slots (rows: device
// memory, ascending; null: rows 0..count-1); its gradient is compact, grad32[j * len, (j + 1) * len). They
// join the chunk launches' step, reading the same StepControl:
//   prepare_rows  grad32 = rule::prepared_gradient(grad32, control->inv_scale, weight_decay, master row), in
//                 place, and with `stats` totals[0..1] = the sum of squares of the finite values and the
//                 count of the non-finite ones (double, a fixed order for a given count: repeatable);
//                 always writes totals (zeros without stats or rows). Before decide_step (DecideArgs::extra).
//   update_rows   when control->apply: every selected element through the rule, its gradient times
//                 control->factor, lr = control->lr (adam: lr_t). After decide_step.
// `partials`: device scratch of row_partials_bytes().
inline constexpr int kRowBlocks = 1024;
inline size_t row_partials_bytes() { return static_cast<size_t>(kRowBlocks) * 2 * sizeof(double); }
void prepare_rows(float* grad32, const float* master, const int64_t* rows, int64_t count, int64_t len,
                  float weight_decay, const StepControl* control, bool stats, double* partials, double* totals,
                  cudaStream_t s);
template <typename Rule>
void update_rows(const Rule& rule, const int64_t* rows, int64_t count, int64_t len, float* master,
                 const float* grad32, float* slot0, float* slot1, bool decay, const StepControl* control,
                 cudaStream_t s);

// data[0, count) = value (slots that do not start at zero).
void fill_values(float* data, int64_t count, float value, cudaStream_t s);

// out[0] = scaler.scale * weight rounded to T (double -> float -> T, as Tensor::fill): the loss gradient
// the next backward starts from.
template <typename T>
void write_loss_scale(const StepControl* control, double weight, T* out, cudaStream_t s);

}  // namespace fastnn::optim::gpu
