// batch_norm's NHWC CPU kernel, one of the fast CPU kernels (FASTNN_CPU_KERNELS=reference leaves it
// out): the activation seen as [M, C] rows (M = N*H*W), the formulas of batch_norm.h. Per-channel sums
// run over a fixed number of row blocks (a function of M only), each adding its rows into a double per
// channel (the inner loop runs along the channels, contiguous), then the blocks are added in order:
// reproducible on any thread count, and within rounding of the NCHW kernel, whose per-plane order
// differs. Cross-replica statistics as in the NCHW kernel.
#include <algorithm>
#include <cmath>
#include <vector>

#include <tbb/parallel_for.h>

#include "trainer/ops/batch_norm.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/layout_adapter.h"

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

template <typename T>
void normalize_rows(int64_t m, int64_t c, const T* x, const T* gamma, const T* beta, const T* mean, const T* invstd, T* y) {
  std::vector<T> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[ch] = gamma[ch] * invstd[ch];
    shift[ch] = beta[ch] - mean[ch] * scale[ch];
  }
  cpu::parallel_range(m, std::max<int64_t>(1, cpu::kElementwiseGrain / c), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* in = x + r * c;
      T* out = y + r * c;
      for (int64_t ch = 0; ch < c; ++ch) out[ch] = in[ch] * scale[ch] + shift[ch];
    }
  });
}

template <typename T>
class BatchNormNhwcCpu final : public OpKernel {
 public:
  BatchNormNhwcCpu(const BatchNormParams& p, const Shape& nchw_shape, DType dt)
      : OpKernel("batch_norm", Device::kCpu), p_(p), m_(p.n * p.hw) {
    sig_ = nhwc_signature(batch_norm_signature(p, nchw_shape, dt));
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
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
      normalize_rows(m_, c, x, gamma, beta, mean, invstd, a.outputs[0].data<T>());
      return;
    }
    std::vector<double> sums(static_cast<size_t>(c) + 1), mu(static_cast<size_t>(c));  // sum(x) per channel, count
    channel_sums(m_, c, [&](int64_t r0, int64_t r1, double* acc) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t ch = 0; ch < c; ++ch) acc[ch] += static_cast<double>(x[r * c + ch]);
    }, sums.data());
    sums[static_cast<size_t>(c)] = static_cast<double>(m_);
    if (a.replicas) a.replicas->sum(sums);
    const double m = sums[static_cast<size_t>(c)];
    for (int64_t ch = 0; ch < c; ++ch) mu[ch] = sums[ch] / m;
    channel_sums(m_, c, [&](int64_t r0, int64_t r1, double* acc) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t ch = 0; ch < c; ++ch) {
          const double d = static_cast<double>(x[r * c + ch]) - mu[ch];
          acc[ch] += d * d;
        }
    }, sums.data());
    if (a.replicas) a.replicas->sum(std::span<double>(sums.data(), static_cast<size_t>(c)));
    for (int64_t ch = 0; ch < c; ++ch) {
      const double var = sums[ch] / m;
      mean[ch] = static_cast<T>(mu[ch]);
      invstd[ch] = static_cast<T>(1.0 / std::sqrt(var + p_.epsilon));
      const double unbiased = m > 1 ? var * m / (m - 1) : var;
      running_mean[ch] = static_cast<T>(p_.momentum * running_mean[ch] + (1 - p_.momentum) * mu[ch]);
      running_var[ch] = static_cast<T>(p_.momentum * running_var[ch] + (1 - p_.momentum) * unbiased);
    }
    normalize_rows(m_, c, x, gamma, beta, mean, invstd, a.outputs[0].data<T>());
  }

  void run_backward(const BackwardArgs& a) override {
    auto opt = [](Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    const T *x = a.inputs[0].data<T>(), *gamma = a.params[0].data<T>(), *dy = a.d_outputs[0].data<T>();
    const T *mean = a.saved[0].data<T>(), *invstd = a.saved[1].data<T>();
    T *dx = opt(a.d_inputs[0]), *dgamma = opt(a.d_params[0]), *dbeta = opt(a.d_params[1]);
    const int64_t c = p_.c;
    const auto channels = static_cast<size_t>(c);
    // sum(dy) per channel, then sum(dy * (x - mean)) per channel, then the count.
    std::vector<double> sums(2 * channels + 1);
    channel_sums(m_, 2 * c, [&](int64_t r0, int64_t r1, double* acc) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t ch = 0; ch < c; ++ch) {
          const double g = dy[r * c + ch];
          acc[ch] += g;
          acc[c + ch] += g * (static_cast<double>(x[r * c + ch]) - static_cast<double>(mean[ch]));
        }
    }, sums.data());
    for (int64_t ch = 0; ch < c; ++ch) {
      sums[channels + ch] *= static_cast<double>(invstd[ch]);  // sum(dy * xhat)
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
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t i = r * c + ch;
          dx[i] = static_cast<T>(k[ch] * (dy[i] - ca[ch] - (x[i] - mu[ch]) * is[ch] * cb[ch]));
        }
    });
  }

 private:
  BatchNormParams p_;
  int64_t m_;
};

}  // namespace

void register_batch_norm_nhwc_cpu(OpRegistry& r) {
  r.add_nhwc_kernel("batch_norm", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    const BatchNormParams p = batch_norm_params(a, in);
    if (!use_fast_cpu_kernels()) return nullptr;  // the reference in the adapter
    const DType dt = compute_dtype("batch_norm", in);
    return make_cpu_kernel<BatchNormNhwcCpu>("batch_norm", dt, p, in[0].shape, dt);
  });
}

}  // namespace fastnn::ops
