// batch_norm's NHWC CPU kernel, one of the fast CPU kernels (FASTNN_CPU_KERNELS=reference leaves it
// out): the activation seen as [M, C] rows (M = N*H*W), the formulas of batch_norm.h. Per-channel sums
// run over a fixed number of row blocks (a function of M only), each adding its rows into a double per
// channel (the inner loop runs along the channels, contiguous), then the blocks are added in order:
// reproducible on any thread count, and within rounding of the NCHW kernel, whose per-plane order
// differs. The forward's mean and variance come from one pass of shifted sums, the backward's two sums
// from one pass; its loops are batch_norm_row_loops.h's (the float ones cloned per instruction set). Cross-replica statistics as in the NCHW kernel.
//
// Also the CPU's one-pass fusions (OpRegistry::add_fusion; the fuse_ops rewrite, ops/fused.h):
// batch_norm+relu, batch_norm+relu6 and batch_norm+add+relu. Their normalisation pass writes the
// activation's output directly, and their backward reads the activation's mask on the fly, instead of
// writing and re-reading the intermediate tensor and its gradient. Each element goes through the same float
// operations as the unfused kernels (relu_cpu.cpp, relu6_cpu.cpp, add_cpu.cpp), so a fused layer is bitwise
// the composite of the two.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <tbb/parallel_for.h>

#include "trainer/ops/batch_norm.h"
#include "trainer/ops/batch_norm_row_loops.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/fused.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/relu.h"
#include "trainer/ops/relu6.h"

namespace fastnn::ops {
namespace {

// Row blocks of the channel sums: enough to spread over the cores, few enough that adding the blocks'
// partial sums stays small beside the pass.
int64_t row_blocks(int64_t m) { return std::min<int64_t>(m, 64); }

// out[c] = sum over rows r of term(r, c), per channel, in double (row blocks in a fixed order).
// `terms` writes, for rows [r0, r1), the terms added into acc (C doubles).
template <typename F>
void channel_sums(int64_t m, int64_t c, F&& terms, double* out) {
  const int64_t blocks = row_blocks(m);
  std::vector<double> partial(static_cast<size_t>(blocks * c), 0.0);
  tbb::parallel_for<int64_t>(0, blocks, [&](int64_t b) {
    const int64_t r0 = m * b / blocks, r1 = m * (b + 1) / blocks;
    terms(r0, r1, partial.data() + b * c);
  });
  std::fill(out, out + c, 0.0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t ch = 0; ch < c; ++ch) out[ch] += partial[static_cast<size_t>(b * c + ch)];
}

using cpu::AddReluEpilogue;
using cpu::NoEpilogue;
using cpu::Relu6Epilogue;
using cpu::ReluEpilogue;

template <typename T, typename Epilogue>
void normalize_rows(int64_t m, int64_t c, const T* x, const T* gamma, const T* beta, const T* mean, const T* invstd,
                    T* y, Epilogue epilogue) {
  std::vector<T> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] = gamma[ch] * invstd[ch];
    shift[ch] = beta[ch] - mean[ch] * scale[ch];
  }
  cpu::parallel_range(m, std::max<int64_t>(1, cpu::kElementwiseGrain / c), [&](int64_t r0, int64_t r1) {
    if constexpr (std::is_same_v<T, float>) {
      cpu::normalize_rows(x + r0 * c, r1 - r0, c, scale.data(), shift.data(), Epilogue::kind,
                          epilogue.residual ? epilogue.residual + r0 * c : nullptr, y + r0 * c);
    } else {
      cpu::normalize_loop(x, r0, r1, c, scale.data(), shift.data(), epilogue, y);
    }
  });
}

// The gradient a fused layer's backward hands batch norm at element i: dy where the activation passed
// its input (relu: y > 0, relu6: 0 < y < 6), as relu_backward / relu6_backward write it.
template <typename T>
struct PlainGradient {
  const T* dy;
  T operator()(int64_t i) const { return dy[i]; }
};
template <typename T>
struct ReluGradient {
  const T* y;
  const T* dy;
  T operator()(int64_t i) const { return cpu::relu_gradient(y[i], dy[i]); }
};
template <typename T>
struct Relu6Gradient {
  const T* y;
  const T* dy;
  T operator()(int64_t i) const { return cpu::relu6_gradient(y[i], dy[i]); }
};

// The batch norm every kernel here computes: the statistics and the normalisation (forward), the
// parameter and input gradients from the gradient arriving at each element (backward).
template <typename T>
class BatchNormRows {
 public:
  explicit BatchNormRows(const BatchNormParams& p) : p_(p), m_(p.n * p.hw) {}
  const BatchNormParams& params() const { return p_; }

  // a.saved gets the mean and inverse std (training: the batch's, and the running statistics move;
  // evaluation: the running ones); y[i] = epilogue(normalised x[i], i).
  template <typename Epilogue>
  void forward(const ForwardArgs& a, T* y, Epilogue epilogue) const {
    const T* x = a.inputs[0].data<T>();
    const T *gamma = a.params[0].data<T>(), *beta = a.params[1].data<T>();
    T *running_mean = a.state[0].data<T>(), *running_var = a.state[1].data<T>();
    T *mean = a.saved[0].data<T>(), *invstd = a.saved[1].data<T>();
    const int64_t c = p_.c;
    if (!a.training) {
      for (int64_t ch = 0; ch < c; ++ch) {
        mean[ch] = running_mean[ch];
        invstd[ch] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(running_var[ch]) + p_.epsilon));
      }
      normalize_rows(m_, c, x, gamma, beta, mean, invstd, y, epilogue);
      return;
    }
    // One pass for both statistics: per channel, the sums of d and d^2 with d = x - shift, shifted by
    // the channel's first value so that they do not cancel where the mean is far from 0 beside the
    // spread. Then the totals over replicas in two steps, as the mean comes before the variance:
    // sum(x) = S1 + m*shift, and sum((x - mean)^2) = S2 - 2e*S1 + m*e^2 with e = mean - shift.
    const auto channels = static_cast<size_t>(c);
    std::vector<double> shift(x, x + c), shifted(2 * channels), sums(channels + 1), mu(channels);
    channel_sums(m_, 2 * c, [&](int64_t r0, int64_t r1, double* acc) {
      if constexpr (std::is_same_v<T, float>) {
        cpu::add_shifted_sums(x + r0 * c, r1 - r0, c, shift.data(), acc);
      } else {
        cpu::shifted_sums_loop(x, r0, r1, c, shift.data(), acc);
      }
    }, shifted.data());
    const auto local = static_cast<double>(m_);
    for (size_t ch = 0; ch < channels; ++ch) sums[ch] = shifted[ch] + local * shift[ch];
    sums[channels] = local;
    if (a.replicas) a.replicas->sum(sums);
    const double m = sums[channels];
    for (size_t ch = 0; ch < channels; ++ch) {
      mu[ch] = sums[ch] / m;
      const double e = mu[ch] - shift[ch];
      sums[ch] = std::max(0.0, shifted[channels + ch] - 2 * e * shifted[ch] + local * e * e);
    }
    if (a.replicas) a.replicas->sum(std::span<double>(sums.data(), channels));
    for (int64_t ch = 0; ch < c; ++ch) {
      const double var = sums[ch] / m;
      mean[ch] = static_cast<T>(mu[ch]);
      invstd[ch] = static_cast<T>(1.0 / std::sqrt(var + p_.epsilon));
      const double unbiased = m > 1 ? var * m / (m - 1) : var;
      running_mean[ch] = static_cast<T>(p_.momentum * running_mean[ch] + (1 - p_.momentum) * mu[ch]);
      running_var[ch] = static_cast<T>(p_.momentum * running_var[ch] + (1 - p_.momentum) * unbiased);
    }
    normalize_rows(m_, c, x, gamma, beta, mean, invstd, y, epilogue);
  }

  // dx, dgamma, dbeta (those defined) from dz[i] = gradient(i), the gradient at batch norm's output.
  template <typename Gradient>
  void backward(const BackwardArgs& a, Gradient gradient) const {
    auto opt = [](Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    const T *x = a.inputs[0].data<T>(), *gamma = a.params[0].data<T>();
    const T *mean = a.saved[0].data<T>(), *invstd = a.saved[1].data<T>();
    T *dx = opt(a.d_inputs[0]), *dgamma = opt(a.d_params[0]), *dbeta = opt(a.d_params[1]);
    const int64_t c = p_.c;
    const auto channels = static_cast<size_t>(c);
    // sum(dz) per channel, then sum(dz * (x - mean)) per channel, then the count.
    std::vector<double> sums(2 * channels + 1);
    channel_sums(m_, 2 * c, [&](int64_t r0, int64_t r1, double* acc) {
      if constexpr (std::is_same_v<T, float> && std::is_same_v<Gradient, PlainGradient<T>>) {
        cpu::add_gradient_sums(gradient.dy + r0 * c, x + r0 * c, r1 - r0, c, mean, acc);
      } else {
        cpu::gradient_sums_loop(gradient, x, r0, r1, c, mean, acc);
      }
    }, sums.data());
    for (int64_t ch = 0; ch < c; ++ch) {
      sums[channels + ch] *= static_cast<double>(invstd[ch]);  // sum(dz * xhat)
      if (dgamma) dgamma[ch] = static_cast<T>(sums[channels + ch]);
      if (dbeta) dbeta[ch] = static_cast<T>(sums[ch]);
    }
    if (!dx) return;
    sums[2 * channels] = static_cast<double>(m_);
    if (a.training && a.replicas) a.replicas->sum(sums);
    const double m = sums[2 * channels];
    std::vector<double> k(channels), mu(channels), is(channels), ca(channels), cb(channels);
    for (int64_t ch = 0; ch < c; ++ch) {
      mu[ch] = mean[ch];
      is[ch] = invstd[ch];
      k[ch] = gamma[ch] * is[ch];
      ca[ch] = a.training ? sums[ch] / m : 0.0;
      cb[ch] = a.training ? sums[channels + ch] / m : 0.0;
    }
    cpu::parallel_range(m_, std::max<int64_t>(1, cpu::kElementwiseGrain / c), [&](int64_t r0, int64_t r1) {
      const cpu::InputGradientCoefficients co{k.data(), ca.data(), mu.data(), is.data(), cb.data()};
      if constexpr (std::is_same_v<T, float> && std::is_same_v<Gradient, PlainGradient<T>>) {
        cpu::input_gradient_rows(gradient.dy + r0 * c, x + r0 * c, r1 - r0, c, co, dx + r0 * c);
      } else {
        cpu::input_gradient_loop(gradient, x, r0, r1, c, co, dx);
      }
    });
  }

 private:
  BatchNormParams p_;
  int64_t m_;
};

template <typename T>
class BatchNormNhwcCpu final : public OpKernel {
 public:
  BatchNormNhwcCpu(const BatchNormParams& p, const Shape& nchw_shape, DType dt)
      : OpKernel("batch_norm", Device::kCpu), rows_(p) {
    sig_ = nhwc_signature(batch_norm_signature(p, nchw_shape, dt));
  }
  const BatchNormParams& params() const { return rows_.params(); }

 protected:
  void run_forward(const ForwardArgs& a) override { rows_.forward(a, a.outputs[0].data<T>(), NoEpilogue<T>{}); }
  void run_backward(const BackwardArgs& a) override {
    rows_.backward(a, PlainGradient<T>{a.d_outputs[0].data<T>()});
  }

 private:
  BatchNormRows<T> rows_;
};

// relu(batch_norm(x)) or relu6(batch_norm(x)) as one layer: batch norm's inputs, params, state and saved
// statistics, the activation's output. No normalised tensor is written or saved; backward writes the
// gradient between the two into dx's buffer (the composite saves both tensors).
template <typename T>
class BatchNormActivationNhwcCpu final : public OpKernel {
 public:
  BatchNormActivationNhwcCpu(const OpSignature& bn, const OpSignature& activation, const BatchNormParams& p,
                             BnActivation act)
      : OpKernel(act == BnActivation::kRelu6 ? "batch_norm+relu6" : "batch_norm+relu", Device::kCpu), rows_(p),
        act_(act) {
    sig_ = fused_activation_signature(bn, activation);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    T* y = a.outputs[0].data<T>();
    if (act_ == BnActivation::kRelu6) rows_.forward(a, y, Relu6Epilogue<T>{});
    else rows_.forward(a, y, ReluEpilogue<T>{});
  }
  void run_backward(const BackwardArgs& a) override {
    const T *y = a.outputs[0].data<T>(), *dy = a.d_outputs[0].data<T>();
    if (a.d_inputs[0].defined()) {
      // The activation's gradient first, by its own vector loop, where dx goes: batch norm's passes read
      // it there, and the last one overwrites each element after reading it. (Masking dy inside batch
      // norm's double-precision loops instead kept them from vectorising: 44.5 against 8.7 ms of a
      // ResNet-20 step.)
      T* dz = a.d_inputs[0].data<T>();
      const int64_t n = a.outputs[0].numel();
      if (act_ == BnActivation::kRelu6) cpu::relu6_backward<T>(n, y, dy, dz);
      else cpu::relu_backward<T>(n, y, dy, dz);
      rows_.backward(a, PlainGradient<T>{dz});
    } else if (act_ == BnActivation::kRelu6) {
      rows_.backward(a, Relu6Gradient<T>{y, dy});
    } else {
      rows_.backward(a, ReluGradient<T>{y, dy});
    }
  }

 private:
  BatchNormRows<T> rows_;
  BnActivation act_;
};

// relu(batch_norm(x) + r) as one layer (a residual unit's end). Inputs x, then the other addend r;
// batch norm's params, state and saved statistics; the add+relu's output. Forward writes y in the
// normalisation pass; backward writes the relu's gradient once, into r's, and batch norm reads it there
// (or, when r needs none, masks dy on the fly).
template <typename T>
class BatchNormAddReluNhwcCpu final : public OpKernel {
 public:
  BatchNormAddReluNhwcCpu(const OpSignature& bn, const OpSignature& add_relu, const BatchNormParams& p)
      : OpKernel("batch_norm+add+relu", Device::kCpu), rows_(p) {
    sig_ = fused_add_relu_signature(bn, add_relu);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    rows_.forward(a, a.outputs[0].data<T>(), AddReluEpilogue<T>{a.inputs[1].data<T>()});
  }
  void run_backward(const BackwardArgs& a) override {
    const T *y = a.outputs[0].data<T>(), *dy = a.d_outputs[0].data<T>();
    const bool bn_grads = a.d_inputs[0].defined() || a.d_params[0].defined() || a.d_params[1].defined();
    if (a.d_inputs[1].defined()) {
      T* dr = a.d_inputs[1].data<T>();
      cpu::relu_backward<T>(a.outputs[0].numel(), y, dy, dr);
      if (bn_grads) rows_.backward(a, PlainGradient<T>{dr});
    } else if (bn_grads) {
      rows_.backward(a, ReluGradient<T>{y, dy});
    }
  }

 private:
  BatchNormRows<T> rows_;
};

// The fusions take only this file's batch norm (a plain NHWC one), so the reference kernels, which
// run behind the layout adapter, keep the composite.
template <typename T>
const BatchNormNhwcCpu<T>* nhwc_batch_norm(const OpKernel& first) {
  return dynamic_cast<const BatchNormNhwcCpu<T>*>(&first);
}

std::unique_ptr<OpKernel> fuse_activation(const OpKernel& first, const OpKernel& then, BnActivation act) {
  const OpSignature &a = first.signature(), &b = then.signature();
  if (!chains_into_activation(a, b)) return nullptr;
  if (const auto* bn = nhwc_batch_norm<float>(first))
    return std::make_unique<BatchNormActivationNhwcCpu<float>>(a, b, bn->params(), act);
  if (const auto* bn = nhwc_batch_norm<double>(first))
    return std::make_unique<BatchNormActivationNhwcCpu<double>>(a, b, bn->params(), act);
  return nullptr;
}

std::unique_ptr<OpKernel> fuse_bn_add_relu(const OpKernel& first, const OpKernel& then) {
  const OpSignature &a = first.signature(), &b = then.signature();
  if (!chains_into_add_relu(a, b)) return nullptr;
  if (const auto* bn = nhwc_batch_norm<float>(first))
    return std::make_unique<BatchNormAddReluNhwcCpu<float>>(a, b, bn->params());
  if (const auto* bn = nhwc_batch_norm<double>(first))
    return std::make_unique<BatchNormAddReluNhwcCpu<double>>(a, b, bn->params());
  return nullptr;
}

}  // namespace

void register_batch_norm_nhwc_cpu(OpRegistry& r) {
  r.add_nhwc_kernel("batch_norm", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    const BatchNormParams p = batch_norm_params(a, in);
    if (!use_fast_cpu_kernels()) return nullptr;  // the reference in the adapter
    const DType dt = compute_dtype("batch_norm", in);
    return make_cpu_kernel<BatchNormNhwcCpu>("batch_norm", dt, p, in[0].shape, dt);
  });
  r.add_fusion("batch_norm", "relu", Device::kCpu, [](const OpKernel& first, const OpKernel& then) {
    return fuse_activation(first, then, BnActivation::kRelu);
  });
  r.add_fusion("batch_norm", "relu6", Device::kCpu, [](const OpKernel& first, const OpKernel& then) {
    return fuse_activation(first, then, BnActivation::kRelu6);
  });
  r.add_fusion("batch_norm", "add+relu", Device::kCpu, fuse_bn_add_relu);
}

}  // namespace fastnn::ops
