// Fused optimizer updates, per tensor and over a chunk table, and the device-side step decision
// (optim/update_kernels.h). Every element goes through update_rules.h, the CPU optimizers' own rules.
#include <cmath>

#include "trainer/cuda/device_util.cuh"
#include "trainer/optim/update_kernels.h"

namespace fastnn::optim::gpu {

namespace {

using cuda::block_sum;
using cuda::from_f;
using cuda::grid_for;
using cuda::kThreads;
using cuda::to_f;

// One parameter, one rule: the per-tensor launchers.
template <typename Rule, typename G>
__global__ void rule_kernel(Rule r, int64_t count, float gs, float* w, const G* g, float* s0, float* s1) {
  FASTNN_GRID_LOOP(k, count) rule::apply_at(r, k, rule::mul(to_f(g[k]), gs), w, s0, s1, true);
}

template <typename Rule, typename G>
void launch_rule(const Rule& r, int64_t count, float gs, float* w, const G* g, float* s0, float* s1, cudaStream_t s) {
  if (count == 0) return;
  rule_kernel<Rule, G><<<grid_for(count), kThreads, 0, s>>>(r, count, gs, w, g, s0, s1);
  CUDA_CHECK_LAUNCH();
}

constexpr int kChunkThreads = 256;

// The gradient statistics: a finite value's square, or one more non-finite value.
__device__ __forceinline__ void count_value(float v, double& ss, double& bad) {
  if (isfinite(v)) ss += static_cast<double>(v) * v;
  else bad += 1;
}

// The block's statistics into its two partials (call from every thread).
__device__ __forceinline__ void write_block_statistics(double ss, double bad, double* partials) {
  ss = block_sum(ss);
  bad = block_sum(bad);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = ss;
    partials[2 * blockIdx.x + 1] = bad;
  }
}

// One block per chunk: the preparation and, with `stats`, the chunk's partial statistics.
template <typename G>
__global__ void prepare_kernel(const TensorChunk* table, const StepControl* control, bool stats, double* partials) {
  const TensorChunk c = table[blockIdx.x];
  const float inv = control->inv_scale;
  const bool prepare = (c.flags & kChunkPrepare) != 0, grad_f32 = (c.flags & kChunkGradF32) != 0;
  const G* g = static_cast<const G*>(c.grad);
  const float* g32 = static_cast<const float*>(c.grad);
  double ss = 0, bad = 0;
  for (int64_t k = threadIdx.x; k < c.count; k += blockDim.x) {
    float v;
    if (prepare) {
      v = rule::prepared_gradient(grad_f32 ? g32[k] : to_f(g[k]), inv, c.weight_decay,
                                  c.weight_decay != 0.0f ? c.master[k] : 0.0f);  // no read without decay
      c.grad32[k] = v;
    } else {
      v = c.grad32[k];
    }
    if (stats) count_value(v, ss, bad);
  }
  if (stats) write_block_statistics(ss, bad, partials);
}

// One thread: totals in chunk order (repeatable), then update_order's decision.
__global__ void decide_kernel(const double* partials, int64_t chunks, DecideArgs a, StepControl* c) {
  double ss = 0, bad = 0;
  if (a.stats) {
    for (int64_t i = 0; i < chunks; ++i) {
      ss += partials[2 * i];
      bad += partials[2 * i + 1];
    }
    if (a.extra) {
      ss += a.extra[0];
      bad += a.extra[1];
    }
  }
  c->sumsq = ss;
  c->nonfinite = bad;
  // A non-finite gradient makes the global norm infinite, as the CPU's sum of squares does: the clipping
  // factor is then NaN and so is every weight (TF's behaviour, update_rules.h) unless the scaler skips.
  c->norm = a.stats ? (bad > 0 ? INFINITY : sqrt(ss)) : 0.0;
  rule::Decision d;
  if (a.fixed) {
    d.factor = a.fixed_factor;
  } else if (a.stats) {
    d = rule::decide(c->norm, bad > 0 || !isfinite(c->norm), a.max_norm, a.has_scaler ? &a.scaler : nullptr,
                     &c->scaler);
    c->inv_scale = static_cast<float>(__ddiv_rn(1.0, c->scaler.scale));
  }
  c->apply = d.apply ? 1 : 0;
  c->factor = d.factor;
  const float lr = a.lr_on_device ? *a.lr_on_device : a.lr;
  c->lr = lr;
  if (a.adam && d.apply) {
    c->lr = rule::adam_lr_t(lr, c->beta1_power, c->beta2_power);
    c->beta1_power = rule::mul(c->beta1_power, a.beta1);
    c->beta2_power = rule::mul(c->beta2_power, a.beta2);
  }
}

template <typename Rule, typename T>
__global__ void update_kernel(Rule r, const TensorChunk* table, const StepControl* control) {
  if (!control->apply) return;
  const TensorChunk c = table[blockIdx.x];
  r.lr = control->lr;
  const float gs = control->factor;
  const bool decay = (c.flags & kChunkDecay) != 0;
  T* value = static_cast<T*>(c.value);
  for (int64_t k = threadIdx.x; k < c.count; k += blockDim.x) {
    rule::apply_at(r, k, rule::mul(c.grad32[k], gs), c.master, c.slot0, c.slot1, decay);
    if constexpr (!std::is_same_v<T, float>) {
      if (value) value[k] = from_f<T>(c.master[k]);
    }
  }
}

// Row updates: block b takes rows b, b + gridDim.x, ...; its threads the elements of a row.
__global__ void prepare_rows_kernel(float* g, const float* master, const int64_t* rows, int64_t count, int64_t len,
                                    float wd, const StepControl* control, bool stats, double* partials) {
  const float inv = control->inv_scale;
  double ss = 0, bad = 0;
  for (int64_t j = blockIdx.x; j < count; j += gridDim.x) {
    const float* w = master + rule::selected_row(rows, j) * len;
    float* gj = g + j * len;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      const float v = rule::prepared_gradient(gj[k], inv, wd, wd != 0.0f ? w[k] : 0.0f);
      gj[k] = v;
      if (stats) count_value(v, ss, bad);
    }
  }
  if (stats) write_block_statistics(ss, bad, partials);
}

// One thread: the blocks' partials in block order.
__global__ void row_totals_kernel(const double* partials, int blocks, double* totals) {
  double ss = 0, bad = 0;
  for (int b = 0; b < blocks; ++b) {
    ss += partials[2 * b];
    bad += partials[2 * b + 1];
  }
  totals[0] = ss;
  totals[1] = bad;
}

template <typename Rule>
__global__ void update_rows_kernel(Rule r, const int64_t* rows, int64_t count, int64_t len, float* master,
                                   const float* g, float* s0, float* s1, bool decay, const StepControl* control) {
  if (!control->apply) return;
  r.lr = control->lr;
  const float gs = control->factor;
  for (int64_t j = blockIdx.x; j < count; j += gridDim.x) {
    const int64_t base = rule::selected_row(rows, j) * len;
    const float* gj = g + j * len;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
      rule::apply_at(r, base + k, rule::mul(gj[k], gs), master, s0, s1, decay);
  }
}

__global__ void fill_kernel(float* data, int64_t count, float value) {
  FASTNN_GRID_LOOP(k, count) data[k] = value;
}

template <typename T>
__global__ void loss_scale_kernel(const StepControl* c, double weight, T* out) {
  out[0] = from_f<T>(static_cast<float>(__dmul_rn(c->scaler.scale, weight)));
}

}  // namespace

template <typename G>
void sgd_update(int64_t count, float lr, float grad_scale, float* w, const G* g, cudaStream_t s) {
  launch_rule(rule::Sgd{.lr = lr}, count, grad_scale, w, g, nullptr, nullptr, s);
}

template <typename G>
void momentum_update(int64_t count, float lr, float momentum, bool nesterov, float grad_scale, float* w, const G* g,
                     float* accum, cudaStream_t s) {
  launch_rule(rule::Momentum{.lr = lr, .momentum = momentum, .nesterov = nesterov}, count, grad_scale, w, g, accum,
              nullptr, s);
}

template <typename G>
void adam_update(int64_t count, float lr_t, float beta1, float beta2, float epsilon, float grad_scale, float* w,
                 const G* g, float* m, float* v, cudaStream_t s) {
  launch_rule(rule::Adam{.lr = lr_t, .one_minus_beta1 = 1.0f - beta1, .one_minus_beta2 = 1.0f - beta2,
                         .epsilon = epsilon},
              count, grad_scale, w, g, m, v, s);
}

template <typename G>
void adam_weight_decay_update(int64_t count, float lr, float beta1, float beta2, float epsilon, float rate,
                              float grad_scale, float* w, const G* g, float* m, float* v, cudaStream_t s) {
  launch_rule(rule::AdamWeightDecay{.lr = lr, .beta1 = beta1, .beta2 = beta2, .epsilon = epsilon, .rate = rate},
              count, grad_scale, w, g, m, v, s);
}

template <typename G>
void rmsprop_update(int64_t count, float lr, float decay, float momentum, float epsilon, float grad_scale, float* w,
                    const G* g, float* ms, float* mom, cudaStream_t s) {
  launch_rule(rule::RmsProp{.lr = lr, .one_minus_decay = 1.0f - decay, .momentum = momentum, .epsilon = epsilon},
              count, grad_scale, w, g, ms, mom, s);
}

template <typename G>
void adagrad_update(int64_t count, float lr, float grad_scale, float* w, const G* g, float* accum, cudaStream_t s) {
  launch_rule(rule::Adagrad{.lr = lr}, count, grad_scale, w, g, accum, nullptr, s);
}

template <typename G>
void adadelta_update(int64_t count, float lr, float rho, float epsilon, float grad_scale, float* w, const G* g,
                     float* accum, float* accum_update, cudaStream_t s) {
  launch_rule(rule::Adadelta{.lr = lr, .rho = rho, .epsilon = epsilon}, count, grad_scale, w, g, accum, accum_update,
              s);
}

template <typename G>
void ftrl_update(int64_t count, float lr, float lr_power, float l1, float l2, float grad_scale, float* w, const G* g,
                 float* accum, float* linear, cudaStream_t s) {
  FASTNN_CHECK(lr > 0.0f, "ftrl needs a learning rate > 0, got ", lr);
  launch_rule(rule::Ftrl{.lr = lr, .lr_power = lr_power, .l1 = l1, .l2 = l2}, count, grad_scale, w, g, accum, linear,
              s);
}

template <typename G>
void prepare_chunks(const TensorChunk* table, int64_t chunks, const StepControl* control, bool prepare, bool stats,
                    double* partials, cudaStream_t s) {
  if (chunks == 0 || !(prepare || stats)) return;
  prepare_kernel<G><<<static_cast<unsigned>(chunks), kChunkThreads, 0, s>>>(table, control, stats, partials);
  CUDA_CHECK_LAUNCH();
}

void decide_step(const double* partials, int64_t chunks, const DecideArgs& args, StepControl* control, cudaStream_t s) {
  decide_kernel<<<1, 1, 0, s>>>(partials, chunks, args, control);
  CUDA_CHECK_LAUNCH();
}

template <typename Rule, typename T>
void update_chunks(const Rule& rule, const TensorChunk* table, int64_t chunks, const StepControl* control,
                   cudaStream_t s) {
  if (chunks == 0) return;
  update_kernel<Rule, T><<<static_cast<unsigned>(chunks), kChunkThreads, 0, s>>>(rule, table, control);
  CUDA_CHECK_LAUNCH();
}

void prepare_rows(float* grad32, const float* master, const int64_t* rows, int64_t count, int64_t len,
                  float weight_decay, const StepControl* control, bool stats, double* partials, double* totals,
                  cudaStream_t s) {
  const int blocks = static_cast<int>(count < kRowBlocks ? count : kRowBlocks);
  if (blocks > 0 && len > 0) {
    prepare_rows_kernel<<<blocks, kChunkThreads, 0, s>>>(grad32, master, rows, count, len, weight_decay, control,
                                                         stats, partials);
    CUDA_CHECK_LAUNCH();
  }
  row_totals_kernel<<<1, 1, 0, s>>>(partials, stats && len > 0 ? blocks : 0, totals);
  CUDA_CHECK_LAUNCH();
}

template <typename Rule>
void update_rows(const Rule& rule, const int64_t* rows, int64_t count, int64_t len, float* master,
                 const float* grad32, float* slot0, float* slot1, bool decay, const StepControl* control,
                 cudaStream_t s) {
  if (count == 0 || len == 0) return;
  const int blocks = static_cast<int>(count < 8 * kRowBlocks ? count : 8 * kRowBlocks);
  update_rows_kernel<Rule><<<blocks, kChunkThreads, 0, s>>>(rule, rows, count, len, master, grad32, slot0, slot1,
                                                            decay, control);
  CUDA_CHECK_LAUNCH();
}

void fill_values(float* data, int64_t count, float value, cudaStream_t s) {
  if (count == 0) return;
  fill_kernel<<<grid_for(count), kThreads, 0, s>>>(data, count, value);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void write_loss_scale(const StepControl* control, double weight, T* out, cudaStream_t s) {
  loss_scale_kernel<T><<<1, 1, 0, s>>>(control, weight, out);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(G)                                                                                   \
  template void sgd_update<G>(int64_t, float, float, float*, const G*, cudaStream_t);                          \
  template void momentum_update<G>(int64_t, float, float, bool, float, float*, const G*, float*, cudaStream_t); \
  template void adam_update<G>(int64_t, float, float, float, float, float, float*, const G*, float*, float*,   \
                               cudaStream_t);                                                                  \
  template void adam_weight_decay_update<G>(int64_t, float, float, float, float, float, float, float*, const G*, \
                                            float*, float*, cudaStream_t);                                   \
  template void rmsprop_update<G>(int64_t, float, float, float, float, float, float*, const G*, float*, float*, \
                                  cudaStream_t);                                                               \
  template void adagrad_update<G>(int64_t, float, float, float*, const G*, float*, cudaStream_t);               \
  template void adadelta_update<G>(int64_t, float, float, float, float, float*, const G*, float*, float*,       \
                                   cudaStream_t);                                                              \
  template void ftrl_update<G>(int64_t, float, float, float, float, float, float*, const G*, float*, float*,    \
                               cudaStream_t);                                                                  \
  template void prepare_chunks<G>(const TensorChunk*, int64_t, const StepControl*, bool, bool, double*,        \
                                  cudaStream_t);                                                               \
  template void write_loss_scale<G>(const StepControl*, double, G*, cudaStream_t);                              \
  FASTNN_INSTANTIATE_RULES(G)
#define FASTNN_INSTANTIATE_RULE(R, T) \
  template void update_chunks<rule::R, T>(const rule::R&, const TensorChunk*, int64_t, const StepControl*, cudaStream_t);
#define FASTNN_INSTANTIATE_ROW_RULE(R)                                                                            \
  template void update_rows<rule::R>(const rule::R&, const int64_t*, int64_t, int64_t, float*, const float*, float*, \
                                     float*, bool, const StepControl*, cudaStream_t);
#define FASTNN_INSTANTIATE_RULES(T)                                                                  \
  FASTNN_INSTANTIATE_RULE(Sgd, T) FASTNN_INSTANTIATE_RULE(Momentum, T) FASTNN_INSTANTIATE_RULE(Adam, T) \
  FASTNN_INSTANTIATE_RULE(AdamWeightDecay, T) FASTNN_INSTANTIATE_RULE(RmsProp, T)                     \
  FASTNN_INSTANTIATE_RULE(Adagrad, T) FASTNN_INSTANTIATE_RULE(Adadelta, T) FASTNN_INSTANTIATE_RULE(Ftrl, T)
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
FASTNN_INSTANTIATE_ROW_RULE(Sgd) FASTNN_INSTANTIATE_ROW_RULE(Momentum) FASTNN_INSTANTIATE_ROW_RULE(Adam)
FASTNN_INSTANTIATE_ROW_RULE(AdamWeightDecay) FASTNN_INSTANTIATE_ROW_RULE(RmsProp) FASTNN_INSTANTIATE_ROW_RULE(Adagrad)
FASTNN_INSTANTIATE_ROW_RULE(Adadelta) FASTNN_INSTANTIATE_ROW_RULE(Ftrl)
#undef FASTNN_INSTANTIATE_ROW_RULE
#undef FASTNN_INSTANTIATE
#undef FASTNN_INSTANTIATE_RULES
#undef FASTNN_INSTANTIATE_RULE

}  // namespace fastnn::optim::gpu
