#include "trainer/ops/top_k.h"

#include <tbb/parallel_reduce.h>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

template <typename T, typename L>
int64_t top_k_count(int64_t n, int64_t classes, int64_t k, const T* logits, const L* labels) {
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw Error(str("top_k: label ", static_cast<int64_t>(labels[i]), " of sample ", i, " is outside [0, ",
                      classes, ")"));
  return tbb::parallel_reduce(
      tbb::blocked_range<int64_t>(0, n, 16), int64_t{0},
      [&](const tbb::blocked_range<int64_t>& r, int64_t acc) {
        for (int64_t i = r.begin(); i < r.end(); ++i) {
          const T* z = logits + i * classes;
          const T v = z[labels[i]];
          int64_t greater = 0;
          for (int64_t j = 0; j < classes; ++j) greater += z[j] > v;
          acc += greater < k;
        }
        return acc;
      },
      [](int64_t a, int64_t b) { return a + b; });
}

template int64_t top_k_count<float, int32_t>(int64_t, int64_t, int64_t, const float*, const int32_t*);
template int64_t top_k_count<float, int64_t>(int64_t, int64_t, int64_t, const float*, const int64_t*);
template int64_t top_k_count<double, int32_t>(int64_t, int64_t, int64_t, const double*, const int32_t*);
template int64_t top_k_count<double, int64_t>(int64_t, int64_t, int64_t, const double*, const int64_t*);

}  // namespace cpu

namespace {

template <typename T>
class TopKCpu final : public OpKernel {
 public:
  TopKCpu(std::span<const TensorSpec> in, int64_t k) : OpKernel("top_k", Device::kCpu), k_(k) {
    sig_.inputs = named_inputs(in, {"logits", "labels"});
    sig_.input_has_grad = {false, false};
    sig_.outputs = {TensorSpec{.name = "correct", .shape = {1}, .dtype = DType::kI64}};
    sig_.has_backward = false;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const Tensor& z = a.inputs[0];
    const Tensor& l = a.inputs[1];
    a.outputs[0].data<int64_t>()[0] =
        l.dtype() == DType::kI32
            ? cpu::top_k_count<T, int32_t>(z.dim(0), z.dim(1), k_, z.data<T>(), l.data<int32_t>())
            : cpu::top_k_count<T, int64_t>(z.dim(0), z.dim(1), k_, z.data<T>(), l.data<int64_t>());
  }

 private:
  int64_t k_;
};

}  // namespace

void register_top_k(OpRegistry& r) {
  r.add(OpDef{
      .name = "top_k",
      .summary = "count of samples whose label is among the k highest logits (ties count as correct)",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     constexpr std::string_view op = "top_k";
                     a.check_known(op, {"k"});
                     expect_inputs(op, in, 2);
                     expect_rank(op, in, 0, {2});
                     expect_labels(op, in, 1, {in[0].shape[0]});
                     const int64_t k = a.get_int(op, "k", 1);
                     if (k < 1 || k > in[0].shape[1])
                       throw ConfigError(str(op, ": k must be in [1, ", in[0].shape[1], "], got ", k));
                     return make_cpu_kernel<TopKCpu>(op, compute_dtype(op, in), in, k);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"k1", {}, {{{8, 5}}, {{8}, DType::kI32, 5}}},
                                   {"k3", {{"k", 3}}, {{{9, 10}}, {{9}, DType::kI64, 10}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_top_k_cuda(r);
#endif
}

}  // namespace fastnn::ops
