// ProfilerHook's timeline on a GPU (step_timeline.h): events recorded on the compute stream, read after
// the step.
#include <cuda_runtime_api.h>

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/runner/step_timeline.h"

namespace fastnn::runner {
namespace {

class CudaTimeline final : public StepTimeline {
 public:
  ~CudaTimeline() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void start() override {
    used_ = 0;
    record();  // events_[0]: the zero point
  }
  size_t mark() override { return record() - 1; }  // mark k is events_[k + 1]
  std::vector<double> resolve_us() override {
    std::vector<double> out;
    if (used_ == 0) return out;
    CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[i]));
      out.push_back(1000.0 * ms);
    }
    return out;
  }

 private:
  size_t record() {
    if (used_ == events_.size()) {
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    CUDA_CHECK(cudaEventRecord(events_[used_], cuda::current_stream()));
    return used_++;
  }

  std::vector<cudaEvent_t> events_;  // reused step after step
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<StepTimeline> make_cuda_timeline() { return std::make_unique<CudaTimeline>(); }

}  // namespace fastnn::runner
