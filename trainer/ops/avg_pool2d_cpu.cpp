#include "trainer/ops/avg_pool2d.h"

#include <algorithm>

#include <vector>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace cpu {

namespace {
// The in-image part of window (op, oq) and its divisor.
struct Span2 : WindowSpan {
  double divisor = 1;
};
inline Span2 window(const Pool2dParams& p, int64_t op, int64_t oq) {
  Span2 s{window_span(p.win, p.h, p.w, op, oq)};
  const int64_t inside = std::max<int64_t>(s.he - s.hb, 0) * std::max<int64_t>(s.we - s.wb, 0);
  s.divisor = static_cast<double>(p.count_include_pad ? p.win.r * p.win.s : std::max<int64_t>(inside, 1));
  return s;
}
}  // namespace

template <typename T>
void avg_pool2d_forward(const Pool2dParams& p, const T* x, T* y) {
  const int64_t hw = p.h * p.w, pq = p.win.p * p.win.q;
  tbb::parallel_for<int64_t>(0, p.n * p.c, [&](int64_t nc) {
    const T* plane = x + nc * hw;
    T* out = y + nc * pq;
    for (int64_t op = 0; op < p.win.p; ++op)
      for (int64_t oq = 0; oq < p.win.q; ++oq) {
        const Span2 s = window(p, op, oq);
        double acc = 0;
        for (int64_t ih = s.hb; ih < s.he; ++ih)
          for (int64_t iw = s.wb; iw < s.we; ++iw) acc += plane[ih * p.w + iw];
        out[op * p.win.q + oq] = static_cast<T>(acc / s.divisor);
      }
  });
}

template <typename T>
void avg_pool2d_backward(const Pool2dParams& p, const T* dy, T* dx) {
  const int64_t hw = p.h * p.w, pq = p.win.p * p.win.q;
  tbb::parallel_for<int64_t>(0, p.n * p.c, [&](int64_t nc) {
    const T* d = dy + nc * pq;
    T* out = dx + nc * hw;
    std::fill(out, out + hw, T(0));
    for (int64_t op = 0; op < p.win.p; ++op)
      for (int64_t oq = 0; oq < p.win.q; ++oq) {
        const Span2 s = window(p, op, oq);
        const T g = static_cast<T>(d[op * p.win.q + oq] / s.divisor);
        for (int64_t ih = s.hb; ih < s.he; ++ih)
          for (int64_t iw = s.wb; iw < s.we; ++iw) out[ih * p.w + iw] += g;
      }
  });
}

template void avg_pool2d_forward<float>(const Pool2dParams&, const float*, float*);
template void avg_pool2d_forward<double>(const Pool2dParams&, const double*, double*);
template void avg_pool2d_backward<float>(const Pool2dParams&, const float*, float*);
template void avg_pool2d_backward<double>(const Pool2dParams&, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class AvgPool2dCpu final : public OpKernel {
 public:
  AvgPool2dCpu(const Pool2dParams& p, DType dt) : OpKernel("avg_pool2d", Device::kCpu), p_(p) {
    sig_ = pool2d_signature(p, dt);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::avg_pool2d_forward<T>(p_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (a.d_inputs[0].defined()) cpu::avg_pool2d_backward<T>(p_, a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
  }

 private:
  Pool2dParams p_;
};

// NHWC: x [N, H, W, C] -> y [N, P, Q, C]: each channel's window summed in the NCHW kernel's order in
// double, the gradient added in its order, so the two agree bitwise; the inner loops run along the
// channels. Split over samples, which keeps a sample's overlapping windows in one task.
template <typename T>
class AvgPool2dNhwcCpu final : public OpKernel {
 public:
  AvgPool2dNhwcCpu(const Pool2dParams& p, DType dt) : OpKernel("avg_pool2d", Device::kCpu), p_(p) {
    sig_ = nhwc_signature(pool2d_signature(p, dt));
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* x = a.inputs[0].data<T>();
    T* y = a.outputs[0].data<T>();
    const int64_t c = p_.c;
    tbb::parallel_for<int64_t>(0, p_.n, [&](int64_t n) {
      std::vector<double> acc(static_cast<size_t>(c));
      for (int64_t op = 0; op < p_.win.p; ++op)
        for (int64_t oq = 0; oq < p_.win.q; ++oq) {
          const cpu::Span2 s = cpu::window(p_, op, oq);
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t ih = s.hb; ih < s.he; ++ih)
            for (int64_t iw = s.wb; iw < s.we; ++iw) {
              const T* in = x + ((n * p_.h + ih) * p_.w + iw) * c;
              for (int64_t ch = 0; ch < c; ++ch) acc[ch] += in[ch];
            }
          T* out = y + ((n * p_.win.p + op) * p_.win.q + oq) * c;
          for (int64_t ch = 0; ch < c; ++ch) out[ch] = static_cast<T>(acc[ch] / s.divisor);
        }
    });
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    const T* dy = a.d_outputs[0].data<T>();
    T* dx = a.d_inputs[0].data<T>();
    const int64_t c = p_.c;
    tbb::parallel_for<int64_t>(0, p_.n, [&](int64_t n) {
      std::fill(dx + n * p_.h * p_.w * c, dx + (n + 1) * p_.h * p_.w * c, T(0));
      std::vector<T> g(static_cast<size_t>(c));
      for (int64_t op = 0; op < p_.win.p; ++op)
        for (int64_t oq = 0; oq < p_.win.q; ++oq) {
          const cpu::Span2 s = cpu::window(p_, op, oq);
          const T* d = dy + ((n * p_.win.p + op) * p_.win.q + oq) * c;
          for (int64_t ch = 0; ch < c; ++ch) g[ch] = static_cast<T>(d[ch] / s.divisor);
          for (int64_t ih = s.hb; ih < s.he; ++ih)
            for (int64_t iw = s.wb; iw < s.we; ++iw) {
              T* out = dx + ((n * p_.h + ih) * p_.w + iw) * c;
              for (int64_t ch = 0; ch < c; ++ch) out[ch] += g[ch];
            }
        }
    });
  }

 private:
  Pool2dParams p_;
};

}  // namespace

void register_avg_pool2d(OpRegistry& r) {
  r.add(OpDef{
      .name = "avg_pool2d",
      .summary = "2-D average pooling, NCHW; count_include_pad selects the divisor at the border",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const Pool2dParams p = pool2d_params("avg_pool2d", a, in, true);
                     const DType dt = compute_dtype("avg_pool2d", in);
                     return make_cpu_kernel<AvgPool2dCpu>("avg_pool2d", dt, p, dt);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{
            {"k2", {{"kernel", 2}}, {{{2, 2, 4, 4}}}},
            {"k3_s2_same", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{1, 2, 7, 6}}}},
            {"k3_s1_pad1_incl", {{"kernel", 3}, {"stride", 1}, {"padding", 1}, {"count_include_pad", true}},
             {{{2, 1, 4, 5}}}},
        };
      },
  });
  r.add_nhwc_kernel("avg_pool2d", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) {
    const Pool2dParams p = pool2d_params("avg_pool2d", a, in, true);
    const DType dt = compute_dtype("avg_pool2d", in);
    return make_cpu_kernel<AvgPool2dNhwcCpu>("avg_pool2d", dt, p, dt);
  });
#ifdef FASTNN_HAVE_CUDA
  register_avg_pool2d_cuda(r);
#endif
}

}  // namespace fastnn::ops
