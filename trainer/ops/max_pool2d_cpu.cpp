#include "trainer/ops/max_pool2d.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace cpu {

namespace {
// Index (within the plane) of the first maximum of window (op, oq); -1 if the window is empty.
template <typename T>
inline int64_t argmax(const Pool2dParams& p, const T* plane, int64_t op, int64_t oq) {
  const WindowSpan b = window_span(p.win, p.h, p.w, op, oq);
  int64_t best = -1;
  T best_v = -std::numeric_limits<T>::infinity();
  for (int64_t ih = b.hb; ih < b.he; ++ih)
    for (int64_t iw = b.wb; iw < b.we; ++iw) {
      const T v = plane[ih * p.w + iw];
      if (best < 0 || v > best_v) best = ih * p.w + iw, best_v = v;
    }
  return best;
}

// LeNet's and VGG's pool: 2x2, stride 2, no padding, so every window lies inside the plane. Same
// result as argmax() (the first maximum in row-major order wins), without the bounds arithmetic.
bool is_2x2_s2(const Pool2dParams& p) {
  const Window2d& g = p.win;
  return g.r == 2 && g.s == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_top == 0 && g.pad_left == 0 &&
         2 * g.p <= p.h && 2 * g.q <= p.w;
}

template <typename T>
inline int64_t argmax_2x2(const T* plane, int64_t w, int64_t op, int64_t oq) {
  const int64_t i0 = 2 * op * w + 2 * oq;
  int64_t best = i0;
  for (const int64_t i : {i0 + 1, i0 + w, i0 + w + 1})
    if (plane[i] > plane[best]) best = i;
  return best;
}
}  // namespace

template <typename T>
void max_pool2d_forward(const Pool2dParams& p, const T* x, T* y) {
  const int64_t hw = p.h * p.w, pq = p.win.p * p.win.q;
  tbb::parallel_for<int64_t>(0, p.n * p.c, [&](int64_t nc) {
    const T* plane = x + nc * hw;
    T* out = y + nc * pq;
    if (is_2x2_s2(p)) {
      for (int64_t op = 0; op < p.win.p; ++op)
        for (int64_t oq = 0; oq < p.win.q; ++oq) out[op * p.win.q + oq] = plane[argmax_2x2(plane, p.w, op, oq)];
      return;
    }
    for (int64_t op = 0; op < p.win.p; ++op)
      for (int64_t oq = 0; oq < p.win.q; ++oq) {
        const int64_t i = argmax(p, plane, op, oq);
        out[op * p.win.q + oq] = i < 0 ? T(0) : plane[i];
      }
  });
}

template <typename T>
void max_pool2d_backward(const Pool2dParams& p, const T* x, const T* dy, T* dx) {
  const int64_t hw = p.h * p.w, pq = p.win.p * p.win.q;
  tbb::parallel_for<int64_t>(0, p.n * p.c, [&](int64_t nc) {
    const T* plane = x + nc * hw;
    const T* d = dy + nc * pq;
    T* out = dx + nc * hw;
    std::fill(out, out + hw, T(0));
    if (is_2x2_s2(p)) {  // windows do not overlap: plain stores
      for (int64_t op = 0; op < p.win.p; ++op)
        for (int64_t oq = 0; oq < p.win.q; ++oq) out[argmax_2x2(plane, p.w, op, oq)] = d[op * p.win.q + oq];
      return;
    }
    for (int64_t op = 0; op < p.win.p; ++op)
      for (int64_t oq = 0; oq < p.win.q; ++oq) {
        const int64_t i = argmax(p, plane, op, oq);
        if (i >= 0) out[i] += d[op * p.win.q + oq];
      }
  });
}

template void max_pool2d_forward<float>(const Pool2dParams&, const float*, float*);
template void max_pool2d_forward<double>(const Pool2dParams&, const double*, double*);
template void max_pool2d_backward<float>(const Pool2dParams&, const float*, const float*, float*);
template void max_pool2d_backward<double>(const Pool2dParams&, const double*, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class MaxPool2dCpu final : public OpKernel {
 public:
  MaxPool2dCpu(const Pool2dParams& p, DType dt) : OpKernel("max_pool2d", Device::kCpu), p_(p) {
    sig_ = pool2d_signature(p, dt);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::max_pool2d_forward<T>(p_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (a.d_inputs[0].defined())
      cpu::max_pool2d_backward<T>(p_, a.inputs[0].data<T>(), a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
  }

 private:
  Pool2dParams p_;
};

// NHWC: x [N, H, W, C] -> y [N, P, Q, C]. Each channel's window is scanned in the NCHW kernel's
// row-major order with the same strict comparison, so the first maximum wins and the two kernels agree
// bitwise; the inner loops run along the channels. The forward keeps only values (rows of output pixels
// in parallel); the backward tracks where each maximum is, split over (sample, block of channels), which
// keeps a sample's overlapping windows' gradient additions in one task.
template <typename T>
class MaxPool2dNhwcCpu final : public OpKernel {
 public:
  MaxPool2dNhwcCpu(const Pool2dParams& p, DType dt) : OpKernel("max_pool2d", Device::kCpu), p_(p) {
    sig_ = nhwc_signature(pool2d_signature(p, dt));
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* x = a.inputs[0].data<T>();
    T* y = a.outputs[0].data<T>();
    const int64_t c = p_.c;
    tbb::parallel_for<int64_t>(0, p_.n * p_.win.p, [&](int64_t row) {
      const int64_t n = row / p_.win.p, op = row % p_.win.p;
      for (int64_t oq = 0; oq < p_.win.q; ++oq) {
        T* out = y + (row * p_.win.q + oq) * c;
        const WindowSpan b = window_span(p_.win, p_.h, p_.w, op, oq);
        if (b.empty()) {
          std::fill(out, out + c, T(0));
          continue;
        }
        bool first = true;
        for (int64_t ih = b.hb; ih < b.he; ++ih)
          for (int64_t iw = b.wb; iw < b.we; ++iw) {
            const T* in = x + ((n * p_.h + ih) * p_.w + iw) * c;
            if (first) {
              std::copy(in, in + c, out);
              first = false;
              continue;
            }
            for (int64_t ch = 0; ch < c; ++ch) out[ch] = in[ch] > out[ch] ? in[ch] : out[ch];
          }
      }
    });
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    const T *x = a.inputs[0].data<T>(), *dy = a.d_outputs[0].data<T>();
    T* dx = a.d_inputs[0].data<T>();
    if (p_.win.r == 1 && p_.win.s == 1) return subsample_backward(dy, dx);
    const int64_t c = p_.c, hw = p_.h * p_.w;
    const int64_t blocks = (c + kChannelBlock - 1) / kChannelBlock;
    tbb::parallel_for<int64_t>(0, p_.n * blocks, [&](int64_t task) {
      const int64_t n = task / blocks, c0 = task % blocks * kChannelBlock, c1 = std::min(c, c0 + kChannelBlock);
      const T* xn = x + n * hw * c;
      T* dxn = dx + n * hw * c;
      for (int64_t i = 0; i < hw; ++i) std::fill(dxn + i * c + c0, dxn + i * c + c1, T(0));
      // Per channel, the maximum so far and its window slot (row-major index within the window); then
      // each of the window's pixels takes dy where it holds the maximum. Both channel loops choose by
      // bit masks rather than branches (GCC vectorizes those; it leaves these selects as branches). A dx
      // element still receives its additions in the order of the output pixels, so the sums are
      // bitwise those of the NCHW kernel.
      using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      T best[kChannelBlock];
      Bits slot[kChannelBlock];
      const int64_t width = c1 - c0;
      for (int64_t op = 0; op < p_.win.p; ++op)
        for (int64_t oq = 0; oq < p_.win.q; ++oq) {
          const WindowSpan b = window_span(p_.win, p_.h, p_.w, op, oq);
          if (b.empty()) continue;
          Bits j = 0;
          for (int64_t ih = b.hb; ih < b.he; ++ih)
            for (int64_t iw = b.wb; iw < b.we; ++iw, ++j) {
              const T* in = xn + (ih * p_.w + iw) * c + c0;
              if (j == 0) {
                std::copy(in, in + width, best);
                std::fill(slot, slot + width, Bits(0));
                continue;
              }
              for (int64_t ch = 0; ch < width; ++ch) {
                const T v = in[ch], held = best[ch];
                const Bits above = Bits(0) - Bits(v > held);  // all ones where v is the new maximum
                best[ch] = v > held ? v : held;
                slot[ch] = (j & above) | (slot[ch] & ~above);
              }
            }
          const T* d = dy + ((n * p_.win.p + op) * p_.win.q + oq) * c + c0;
          j = 0;
          for (int64_t ih = b.hb; ih < b.he; ++ih)
            for (int64_t iw = b.wb; iw < b.we; ++iw, ++j) {
              T* out = dxn + (ih * p_.w + iw) * c + c0;
              for (int64_t ch = 0; ch < width; ++ch) {
                const Bits here = Bits(0) - Bits(slot[ch] == j);
                const T kept = out[ch], added = kept + d[ch];
                out[ch] = std::bit_cast<T>((std::bit_cast<Bits>(added) & here) | (std::bit_cast<Bits>(kept) & ~here));
              }
            }
        }
    });
  }

  // A 1x1 window (TF-slim's `subsample`, ResNet v1's strided shortcut; a pool's padding is below its
  // kernel, so none here): an input pixel lies in at most one window and takes its gradient as the general
  // loop computes it (0 + dy), every other pixel 0. Input rows in parallel, without that loop's per-window
  // bookkeeping, which made this backward several times slower than its memory traffic (ResNet-50 b8,
  // AVX-512: 5.3 ms for block1's shortcut).
  void subsample_backward(const T* dy, T* dx) const {
    const int64_t c = p_.c, sh = p_.win.stride_h, sw = p_.win.stride_w, pp = p_.win.p, qq = p_.win.q;
    const int64_t row_size = p_.w * c;
    cpu::parallel_range(p_.n * p_.h, std::max<int64_t>(1, cpu::kElementwiseGrain / row_size), [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t n = row / p_.h, ih = row % p_.h;
        T* out = dx + row * row_size;
        std::fill(out, out + row_size, T(0));
        if (ih % sh != 0 || ih / sh >= pp) continue;
        const T* d = dy + (n * pp + ih / sh) * qq * c;
        for (int64_t oq = 0; oq < qq && oq * sw < p_.w; ++oq) {
          T* o = out + oq * sw * c;
          const T* g = d + oq * c;
          for (int64_t ch = 0; ch < c; ++ch) o[ch] = T(0) + g[ch];
        }
      }
    });
  }

 private:
  static constexpr int64_t kChannelBlock = 64;

  Pool2dParams p_;
};

// An inference plan's max pool over bfloat16 activations (OpRegistry::add_bf16_input_kernel): NHWC,
// forward only, the output bf16 or f32. Each window's values are compared widened to f32 in
// MaxPool2dNhwcCpu's order, so the output is that kernel's on the widened input, bitwise (a maximum is
// one of the values: narrowing it again is exact).
class MaxPool2dNhwcBf16Cpu final : public OpKernel {
 public:
  MaxPool2dNhwcBf16Cpu(const Pool2dParams& p, bool output_bf16) : OpKernel("max_pool2d", Device::kCpu), p_(p), output_bf16_(output_bf16) {
    sig_ = nhwc_signature(pool2d_signature(p, DType::kF32));
    sig_.inputs[0].dtype = DType::kBF16;
    if (output_bf16) sig_.outputs[0].dtype = DType::kBF16;
    sig_.input_has_grad = {false};
    sig_.has_backward = false;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const auto* x = static_cast<const uint16_t*>(a.inputs[0].raw());
    void* y = a.outputs[0].raw();
    const int64_t c = p_.c;
    tbb::parallel_for<int64_t>(0, p_.n * p_.win.p, [&](int64_t row) {
      const int64_t n = row / p_.win.p, op = row % p_.win.p;
      std::vector<float> best(static_cast<size_t>(c));
      for (int64_t oq = 0; oq < p_.win.q; ++oq) {
        const WindowSpan b = window_span(p_.win, p_.h, p_.w, op, oq);
        std::fill(best.begin(), best.end(), 0.0f);  // an empty window gives 0, as the f32 kernel
        bool first = true;
        for (int64_t ih = b.hb; ih < b.he; ++ih)
          for (int64_t iw = b.wb; iw < b.we; ++iw) {
            const uint16_t* in = x + ((n * p_.h + ih) * p_.w + iw) * c;
            for (int64_t ch = 0; ch < c; ++ch) {
              const float v = bf16_bits_to_f32(in[ch]);
              best[ch] = first || v > best[ch] ? v : best[ch];
            }
            first = false;
          }
        const int64_t at = (row * p_.win.q + oq) * c;
        if (output_bf16_) {
          auto* out = static_cast<uint16_t*>(y) + at;
          for (int64_t ch = 0; ch < c; ++ch) out[ch] = f32_to_bf16_bits(best[ch]);
        } else {
          std::copy(best.begin(), best.end(), static_cast<float*>(y) + at);
        }
      }
    });
  }
  void run_backward(const BackwardArgs&) override { FASTNN_CHECK(false, name(), ": an inference kernel has no backward"); }

 private:
  Pool2dParams p_;
  bool output_bf16_;
};

}  // namespace

void register_max_pool2d(OpRegistry& r) {
  r.add(OpDef{
      .name = "max_pool2d",
      .summary = "2-D max pooling, NCHW; ties go to the first maximum in scan order",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const Pool2dParams p = pool2d_params("max_pool2d", a, in, false);
                     const DType dt = compute_dtype("max_pool2d", in);
                     return make_cpu_kernel<MaxPool2dCpu>("max_pool2d", dt, p, dt);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{
            {"k2", {{"kernel", 2}}, {{{2, 2, 4, 6}}}},
            {"k2_odd_plane", {{"kernel", 2}}, {{{1, 2, 5, 7}}}},  // the 2x2 fast path, last row/column unused
            {"k3_s2_same", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{1, 3, 7, 6}}}},
            {"k1_s2", {{"kernel", 1}, {"stride", 2}}, {{{2, 16, 5, 6}}}},  // ResNet v1's subsampling shortcut
            // 16 channels: the CUDA NHWC kernels that take 8 (f16/bf16) or 4 (f32) channels a thread.
            {"k3_s2_same_c16", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{2, 16, 9, 7}}}},
            {"k3_s1_pad_asym", {{"kernel", Ints{3, 2}}, {"stride", 1}, {"padding", Ints{1, 2, 0, 1}}}, {{{2, 1, 4, 5}}}},
        };
      },
  });
  r.add_nhwc_kernel("max_pool2d", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) {
    const Pool2dParams p = pool2d_params("max_pool2d", a, in, false);
    const DType dt = compute_dtype("max_pool2d", in);
    return make_cpu_kernel<MaxPool2dNhwcCpu>("max_pool2d", dt, p, dt);
  });
  r.add_bf16_input_kernel("max_pool2d", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in, bool output_bf16) {
    return std::make_unique<MaxPool2dNhwcBf16Cpu>(pool2d_params("max_pool2d", a, in, false), output_bf16);
  });
#ifdef FASTNN_HAVE_CUDA
  register_max_pool2d_cuda(r);
#endif
}

}  // namespace fastnn::ops
