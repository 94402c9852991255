#include "trainer/ops/fully_connected.h"

#include <algorithm>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {

namespace cpu {

namespace {
// Blocks over W's rows (units) or columns (inputs), so each task packs its slice of W once and W is
// read once per pass (blocking over batch rows re-packed all of W per block: 4x for LeNet's fc3).
// Fixed sizes: the split, hence every result bit, does not depend on the thread count.
constexpr int64_t kUnitBlock = 128, kInputBlock = 256;

// Below this many rows the forward is a matrix-vector product per row: a GEMM packs its W slice on every
// call, which at one row took five to six times the product itself (LeNet's fc3, 3136 -> 1024: 0.17
// against 0.95-1.06 ms; ResNet-50's logits, 2048 -> 1001: 0.11 against 0.56-0.58 ms; zen3, 2 threads).
// At 4 rows the two were about even (0.70 against 0.77-0.86 ms), at 8 the GEMM won. Batch 1 is what a
// server answering one client at a time and `predict --batch_size 1` run. The rows' summation order then
// differs from a larger batch's, which the CPU kernels already allow (docs/INFERENCE.md).
constexpr int64_t kGemvRows = 4;

template <typename F>
void for_blocks(int64_t count, int64_t block, F&& f) {
  parallel_range((count + block - 1) / block, 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) f(blk * block, std::min(count, (blk + 1) * block));
  });
}
}  // namespace

template <typename T>
void fully_connected_forward(const FullyConnectedParams& p, const T* x, const T* w, const T* b, T* y) {
  use_single_threaded_blas();
  for_blocks(p.units, kUnitBlock, [&](int64_t u0, int64_t u1) {  // y[:, u0:u1] = x W[u0:u1]^T
    if (p.n < kGemvRows)
      for (int64_t r = 0; r < p.n; ++r) gemv(u1 - u0, p.d, w + u0 * p.d, p.d, x + r * p.d, y + r * p.units + u0);
    else
      gemm(false, true, p.n, u1 - u0, p.d, T(1), x, p.d, w + u0 * p.d, p.d, T(0), y + u0, p.units);
    if (b)
      for (int64_t r = 0; r < p.n; ++r)
        for (int64_t u = u0; u < u1; ++u) y[r * p.units + u] += b[u];
  });
}

template <typename T>
void fully_connected_backward_data(const FullyConnectedParams& p, const T* w, const T* dy, T* dx) {
  use_single_threaded_blas();
  for_blocks(p.d, kInputBlock, [&](int64_t i0, int64_t i1) {  // dx[:, i0:i1] = dy W[:, i0:i1]
    gemm(false, false, p.n, i1 - i0, p.units, T(1), dy, p.units, w + i0, p.d, T(0), dx + i0, p.d);
  });
}

template <typename T>
void fully_connected_backward_filter(const FullyConnectedParams& p, const T* x, const T* dy, T* dw, T* db) {
  use_single_threaded_blas();
  for_blocks(p.units, kUnitBlock, [&](int64_t u0, int64_t u1) {
    if (dw) gemm(true, false, u1 - u0, p.d, p.n, T(1), dy + u0, p.units, x, p.d, T(0), dw + u0 * p.d, p.d);
    if (db)
      for (int64_t u = u0; u < u1; ++u) {
        double acc = 0;
        for (int64_t n = 0; n < p.n; ++n) acc += dy[n * p.units + u];
        db[u] = static_cast<T>(acc);
      }
  });
}

#define FASTNN_FC_INSTANTIATE(T)                                                                                 \
  template void fully_connected_forward<T>(const FullyConnectedParams&, const T*, const T*, const T*, T*);       \
  template void fully_connected_backward_data<T>(const FullyConnectedParams&, const T*, const T*, T*);           \
  template void fully_connected_backward_filter<T>(const FullyConnectedParams&, const T*, const T*, T*, T*);
FASTNN_FC_INSTANTIATE(float)
FASTNN_FC_INSTANTIATE(double)
#undef FASTNN_FC_INSTANTIATE

}  // namespace cpu

namespace {

template <typename T>
class FullyConnectedCpu final : public OpKernel {
 public:
  FullyConnectedCpu(const FullyConnectedParams& p, const Shape& x_shape, DType dt)
      : OpKernel("fully_connected", Device::kCpu), p_(p) {
    sig_ = fully_connected_signature(p, x_shape, dt);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::fully_connected_forward<T>(p_, a.inputs[0].data<T>(), a.params[0].data<T>(),
                                    p_.bias ? a.params[1].data<T>() : nullptr, a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    const T* dy = a.d_outputs[0].data<T>();
    if (a.d_inputs[0].defined())
      cpu::fully_connected_backward_data<T>(p_, a.params[0].data<T>(), dy, a.d_inputs[0].data<T>());
    T* dw = a.d_params[0].defined() ? a.d_params[0].data<T>() : nullptr;
    T* db = p_.bias && a.d_params[1].defined() ? a.d_params[1].data<T>() : nullptr;
    if (dw || db) cpu::fully_connected_backward_filter<T>(p_, a.inputs[0].data<T>(), dy, dw, db);
  }

 private:
  FullyConnectedParams p_;
};

}  // namespace

void register_fully_connected(OpRegistry& r) {
  r.add(OpDef{
      .name = "fully_connected",
      .summary = "y = x W^T + b with x flattened to [N, D]",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const FullyConnectedParams p = fully_connected_params(a, in);
                     const DType dt = compute_dtype("fully_connected", in);
                     return make_cpu_kernel<FullyConnectedCpu>("fully_connected", dt, p, in[0].shape, dt);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{
            {"2d", {{"units", 5}}, {{{3, 7}}}},
            {"4d_nobias", {{"units", 3}, {"bias", false}}, {{{2, 2, 3, 2}}}},
            {"rows_over_block", {{"units", 18}}, {{{19, 4}}}},
            {"units_and_inputs_over_blocks", {{"units", 130}}, {{{1, 5, 4, 13}}}},  // 2 unit, 2 input blocks
        };
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_fully_connected_cuda(r);
#endif
}

}  // namespace fastnn::ops
