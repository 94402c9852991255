// Points in time on the device's own order of work, for ProfilerHook (loop/profiler.h): the profiler
// asks the step runner for a timeline and marks it at phase and layer boundaries; the times are read
// after the step. On the CPU a mark is the wall clock when it is taken; on a GPU it is a CUDA event
// recorded on the compute stream, so a layer's time is the GPU's time for its kernels, not the
// host's time to launch them.
//
//   auto tl = runner.make_timeline();
//   tl->start();  size_t a = tl->mark();  ...  size_t b = tl->mark();
//   std::vector<double> us = tl->resolve_us();   // us[b] - us[a]: microseconds between the marks
//
// Threading: the thread driving the runner. resolve_us() waits for the device.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

namespace fastnn::runner {

class StepTimeline {
 public:
  virtual ~StepTimeline() = default;
  virtual void start() = 0;   // the zero point; forgets earlier marks
  virtual size_t mark() = 0;  // index of a new mark, in resolve_us()'s vector
  // Microseconds from start() to each mark, in mark order (waits for the device).
  virtual std::vector<double> resolve_us() = 0;
};

// The host's steady clock (the CPU runner's timeline).
class HostTimeline final : public StepTimeline {
 public:
  void start() override {
    start_ = Clock::now();
    marks_.clear();
  }
  size_t mark() override {
    marks_.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start_).count());
    return marks_.size() - 1;
  }
  std::vector<double> resolve_us() override { return marks_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now();
  std::vector<double> marks_;
};

// CUDA events recorded on the calling thread's current stream (step_timeline_cuda.cpp; CUDA builds only).
std::unique_ptr<StepTimeline> make_cuda_timeline();

}  // namespace fastnn::runner
