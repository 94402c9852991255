#include "trainer/optim/device_row_optimizer.h"

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/optim/rule_dispatch.h"
#include "trainer/optim/update_kernels.h"

namespace fastnn {

using optim::gpu::StepControl;

DeviceRowOptimizer::DeviceRowOptimizer(const OptimizerOptions& o, std::string name, float* master, int64_t rows,
                                       int64_t len)
    : o_(o), master_(master), rows_(rows), len_(len) {
  FASTNN_CHECK(rows >= 0 && len >= 1 && (rows == 0 || master), "device row optimizer: bad parameter ", name, " [",
               rows, ", ", len, "]");
  cudaStream_t s = cuda::current_stream();
  for (const optim::SlotInit& init : optim::slot_inits(o)) {
    Tensor t = Tensor::empty({std::max<int64_t>(1, rows * len)}, DType::kF32, Device::kCuda);
    if (init.init == 0.0f) cuda::fill_bytes(t, 0, s);
    else optim::gpu::fill_values(t.data<float>(), rows * len, init.init, s);
    slots_.push_back({name + "/" + init.name, t});
  }
  partials_ = Tensor::empty({static_cast<int64_t>(optim::gpu::row_partials_bytes())}, DType::kU8, Device::kCuda);
  totals_ = Tensor::empty({2}, DType::kF64, Device::kCuda);
  cuda::fill_bytes(totals_, 0, s);
}

void DeviceRowOptimizer::prepare(const int64_t* selected, int64_t count, float* grad, float weight_decay, bool stats,
                                 const void* control, void* stream) {
  FASTNN_CHECK(count >= 0 && count <= rows_ && (selected || count == rows_), "device row optimizer: ", count,
               " selected rows of ", rows_);
  optim::gpu::prepare_rows(grad, master_, selected, count, len_, weight_decay, static_cast<const StepControl*>(control),
                            stats, static_cast<double*>(partials_.raw()), totals(), cuda::stream_or_current(stream));
}

void DeviceRowOptimizer::apply(const int64_t* selected, int64_t count, const float* grad, const void* control,
                               void* stream) {
  FASTNN_CHECK(count >= 0 && count <= rows_ && (selected || count == rows_), "device row optimizer: ", count,
               " selected rows of ", rows_);
  float* s0 = slots_.size() > 0 ? slots_[0].data.data<float>() : nullptr;
  float* s1 = slots_.size() > 1 ? slots_[1].data.data<float>() : nullptr;
  cudaStream_t s = cuda::stream_or_current(stream);
  const auto* c = static_cast<const StepControl*>(control);
  // ParamRef::decay of the head's rows is true: adamweightdecay decays them (as the CPU head's optimizer).
  optim::with_rule(o_, [&](auto rule) { optim::gpu::update_rows(rule, selected, count, len_, master_, grad, s0, s1, true, c, s); });
}

}  // namespace fastnn
