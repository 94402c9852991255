#include "trainer/ops/softmax_xent.h"

#include <cmath>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

namespace {
template <typename L>
void check_labels(const char* op, int64_t n, int64_t k, const L* labels) {
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= k)
      throw Error(str(op, ": label ", static_cast<int64_t>(labels[i]), " of sample ", i, " is outside [0, ", k, ")"));
}
}  // namespace

// W = sum_n w[y_n] of class_weights (the labels checked).
template <typename L>
double label_weight_sum(const SoftmaxXentParams& p, const L* labels) {
  double w = 0;
  for (int64_t r = 0; r < p.n; ++r) w += p.class_weights[static_cast<size_t>(labels[r])];
  return w;
}

// S = sum_k w_k, the weight of a fully smoothed target.
double class_weight_total(const SoftmaxXentParams& p) {
  double s = 0;
  for (double w : p.class_weights) s += w;
  return s;
}

template <typename T, typename L>
void softmax_xent_forward(const SoftmaxXentParams& p, const T* logits, const L* labels, T* loss, T* probs,
                          double* row_loss) {
  check_labels("softmax_xent", p.n, p.k, labels);
  const double eps = p.label_smoothing, off = eps / static_cast<double>(p.k);
  const bool weighted = !p.class_weights.empty();
  const double* w = p.class_weights.data();
  const double s = weighted ? class_weight_total(p) : 0;
  parallel_range(p.n, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* z = logits + r * p.k;
      T* pr = probs + r * p.k;
      double mx = z[0];
      for (int64_t j = 1; j < p.k; ++j) mx = std::max(mx, static_cast<double>(z[j]));
      double sum = 0, sum_z = 0;
      for (int64_t j = 0; j < p.k; ++j) {
        sum += std::exp(z[j] - mx);
        sum_z += weighted ? w[j] * (z[j] - mx) : z[j] - mx;
      }
      const double lse = std::log(sum);  // log sum exp(z - mx)
      for (int64_t j = 0; j < p.k; ++j) pr[j] = static_cast<T>(std::exp(z[j] - mx - lse));
      // -sum_k q_k log p_k with log p_k = z_k - mx - lse and sum_k q_k = 1.
      const double logp_label = z[labels[r]] - mx - lse;
      if (!weighted) {
        const double mean_logp = sum_z / static_cast<double>(p.k) - lse;
        row_loss[r] = -(1 - eps) * logp_label - off * static_cast<double>(p.k) * mean_logp;
        continue;
      }
      // sum_k w_k log p_k = sum_k w_k (z_k - mx) - S lse
      row_loss[r] = -(1 - eps) * w[labels[r]] * logp_label - off * (sum_z - s * lse);
    }
  });
  double total = 0;
  for (int64_t r = 0; r < p.n; ++r) total += row_loss[r];
  loss[0] = static_cast<T>(total / (weighted ? label_weight_sum(p, labels) : static_cast<double>(p.n)));
}

template <typename T, typename L>
void softmax_xent_backward(const SoftmaxXentParams& p, const T* probs, const L* labels, const T* dloss, T* dlogits) {
  check_labels("softmax_xent", p.n, p.k, labels);
  const double eps = p.label_smoothing, off = eps / static_cast<double>(p.k);
  if (p.class_weights.empty()) {
    const double g = static_cast<double>(dloss[0]) / static_cast<double>(p.n);
    parallel_range(p.n, 4, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* pr = probs + r * p.k;
        T* d = dlogits + r * p.k;
        for (int64_t j = 0; j < p.k; ++j) d[j] = static_cast<T>(g * (pr[j] - off));
        d[labels[r]] = static_cast<T>(g * (pr[labels[r]] - off - (1 - eps)));
      }
    });
    return;
  }
  const double* w = p.class_weights.data();
  const double s = class_weight_total(p);
  const double g = static_cast<double>(dloss[0]) / label_weight_sum(p, labels);
  parallel_range(p.n, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* pr = probs + r * p.k;
      T* d = dlogits + r * p.k;
      const double wy = w[labels[r]], scale = (1 - eps) * wy + off * s;
      for (int64_t j = 0; j < p.k; ++j) d[j] = static_cast<T>(g * (scale * pr[j] - off * w[j]));
      d[labels[r]] = static_cast<T>(g * (scale * pr[labels[r]] - off * wy - (1 - eps) * wy));
    }
  });
}

#define FASTNN_XENT_INSTANTIATE(T, L)                                                                           \
  template void softmax_xent_forward<T, L>(const SoftmaxXentParams&, const T*, const L*, T*, T*, double*);      \
  template void softmax_xent_backward<T, L>(const SoftmaxXentParams&, const T*, const L*, const T*, T*);
FASTNN_XENT_INSTANTIATE(float, int32_t)
FASTNN_XENT_INSTANTIATE(float, int64_t)
FASTNN_XENT_INSTANTIATE(double, int32_t)
FASTNN_XENT_INSTANTIATE(double, int64_t)
#undef FASTNN_XENT_INSTANTIATE

}  // namespace cpu

namespace {

void check_class_weights(std::string_view op, const SoftmaxXentParams& p) {
  if (p.class_weights.empty()) return;
  if (static_cast<int64_t>(p.class_weights.size()) != p.k)
    throw ConfigError(str(op, ": ", p.class_weights.size(), " class weights for ", p.k, " classes"));
  for (size_t c = 0; c < p.class_weights.size(); ++c)
    if (!(p.class_weights[c] > 0 && std::isfinite(p.class_weights[c])))
      throw ConfigError(str(op, ": the weight of class ", c, " is ", p.class_weights[c], "; class weights are > 0"));
}

template <typename T>
class SoftmaxXentCpu final : public OpKernel {
 public:
  SoftmaxXentCpu(const SoftmaxXentParams& p, std::span<const TensorSpec> in)
      : OpKernel("softmax_xent", Device::kCpu), p_(p) {
    sig_.inputs = named_inputs(in, {"logits", "labels"});
    sig_.input_has_grad = {true, false};
    sig_.outputs = {TensorSpec{.name = "loss", .shape = {1}, .dtype = in[0].dtype}};
    sig_.saved = {TensorSpec{.name = "probs", .shape = {p.n, p.k}, .dtype = in[0].dtype}};
    sig_.workspace_bytes = static_cast<size_t>(p.n) * sizeof(double);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    double* rows = cpu::workspace_span<double>(a.workspace, sig_.workspace_bytes).data();
    const T* z = a.inputs[0].data<T>();
    T* loss = a.outputs[0].data<T>();
    T* probs = a.saved[0].data<T>();
    if (a.inputs[1].dtype() == DType::kI32)
      cpu::softmax_xent_forward<T, int32_t>(p_, z, a.inputs[1].data<int32_t>(), loss, probs, rows);
    else
      cpu::softmax_xent_forward<T, int64_t>(p_, z, a.inputs[1].data<int64_t>(), loss, probs, rows);
  }
  void run_backward(const BackwardArgs& a) override {
    Tensor& dz = a.d_inputs[0];
    if (!dz.defined()) return;
    const T* probs = a.saved[0].data<T>();
    const T* dloss = a.d_outputs[0].data<T>();
    if (a.inputs[1].dtype() == DType::kI32)
      cpu::softmax_xent_backward<T, int32_t>(p_, probs, a.inputs[1].data<int32_t>(), dloss, dz.data<T>());
    else
      cpu::softmax_xent_backward<T, int64_t>(p_, probs, a.inputs[1].data<int64_t>(), dloss, dz.data<T>());
  }

 private:
  SoftmaxXentParams p_;
};

}  // namespace

std::vector<double> softmax_xent_row_terms(const Tensor& workspace, int64_t n) {
  FASTNN_CHECK(workspace.device() == Device::kCpu && workspace.nbytes() >= static_cast<size_t>(n) * sizeof(double),
               "softmax_xent: row terms are read from the CPU kernel's workspace of ", n, " doubles, got ",
               workspace.describe());
  const auto* rows = static_cast<const double*>(workspace.raw());
  return std::vector<double>(rows, rows + n);
}

double softmax_xent_divisor(const std::vector<double>& class_weights, const Tensor& labels) {
  if (class_weights.empty()) return static_cast<double>(labels.numel());
  const SoftmaxXentParams p{.n = labels.numel(), .k = static_cast<int64_t>(class_weights.size()),
                            .class_weights = class_weights};
  return labels.dtype() == DType::kI32 ? cpu::label_weight_sum(p, labels.data<int32_t>())
                                       : cpu::label_weight_sum(p, labels.data<int64_t>());
}

void register_softmax_xent(OpRegistry& r) {
  r.add(OpDef{
      .name = "softmax_xent",
      .summary = "softmax cross-entropy with label smoothing, mean over the batch",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     constexpr std::string_view op = "softmax_xent";
                     a.check_known(op, {"label_smoothing", "class_weights"});
                     expect_inputs(op, in, 2);
                     expect_rank(op, in, 0, {2});
                     expect_labels(op, in, 1, {in[0].shape[0]});
                     SoftmaxXentParams p{in[0].shape[0], in[0].shape[1], a.get_float(op, "label_smoothing", 0.0),
                                         a.get_floats(op, "class_weights", {})};
                     if (!(p.label_smoothing >= 0 && p.label_smoothing < 1))
                       throw ConfigError(str(op, ": label_smoothing must be in [0, 1)"));
                     check_class_weights(op, p);
                     return make_cpu_kernel<SoftmaxXentCpu>(op, compute_dtype(op, in), p, in);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{
            {"plain_i32", {}, {{{4, 5}, DType::kF32, 0, -2, 2}, {{4}, DType::kI32, 5}}},
            {"smooth0.1_i64", {{"label_smoothing", 0.1}}, {{{3, 7}, DType::kF32, 0, -3, 3}, {{3}, DType::kI64, 7}}},
        };
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_softmax_xent_cuda(r);
#endif
}

}  // namespace fastnn::ops
