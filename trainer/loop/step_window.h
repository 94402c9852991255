// The training loop's sums over a window of steps: loss, accuracy, data wait and the three clocks, since
// the last log line or the last evaluation (trainer/loop/trainer.cpp).
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "trainer/runner/step_runner.h"

namespace fastnn::loop {

// Sums over a window of steps (since the last log line, or since the last evaluation).
struct StepWindow {
  double loss_sum = 0, wait_s = 0;
  int64_t steps = 0, correct = 0, examples = 0;
  Clock::time_point start = Clock::now();
  // CPU seconds at the window's start: the process's, and the step loop's thread's (a window starts and
  // ends on that thread).
  double process_cpu = process_cpu_seconds(), loop_cpu = thread_cpu_seconds();
  // Leaves out of the window what its three clocks ran since `mark` (a StepWindow made then): an evaluation's
  // time is not training throughput, nor its CPU the training's.
  void skip_since(const StepWindow& mark) {
    start += Clock::now() - mark.start;
    process_cpu += process_cpu_seconds() - mark.process_cpu;
    loop_cpu += thread_cpu_seconds() - mark.loop_cpu;
  }
  void add(const StepResult& r, double wait) {
    loss_sum += r.loss;
    wait_s += wait;
    ++steps;
    correct += r.correct;
    examples += r.examples;
  }
  double accuracy() const { return examples ? static_cast<double>(correct) / static_cast<double>(examples) : 0; }
  void reset() { *this = StepWindow{}; }
};

}  // namespace fastnn::loop
