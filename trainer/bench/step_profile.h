// Where a training step's time goes, layer by layer, on the device that runs it: the table the GPU
// speed work starts from (`fastnn bench train --profile N`, docs/PERFORMANCE.md).
//
//   StepProfile prof(runner);        // attaches to the runner's layers and phases
//   for (...) { prof.begin_step(); runner.train(...); prof.end_step(); }
//   ProfileTable t = prof.table();   // averages per step
//
// Times come from the runner's timeline (step_timeline.h): CUDA events on the compute stream on a GPU,
// so a layer's time is its kernels' time on the device; the wall clock on the CPU. Per layer: forward
// and backward milliseconds (backward includes summing a multiply-used tensor's gradients); per op
// type: the sum over its layers; per phase of the runner: forward_backward (layers plus the loss and
// glue), allreduce (data parallel), optimizer (weight decay, norm, clipping, update); per named part of
// a kernel call (ops/part_marks.h: "conv2d fprop", "conv2d dgrad", "conv2d wgrad", "conv2d layout",
// ...), summed over every layer whose kernel marks it, fused layers included. Marking adds an
// event record per layer or part boundary, a few microseconds each: profile apart from timed steps.
// Threading: the thread driving the runner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/graph/graph.h"
#include "trainer/runner/step_timeline.h"
#include "trainer/ops/part_marks.h"

namespace fastnn::runner {
class StepRunner;
}  // namespace fastnn::runner

namespace fastnn::bench {

struct ProfileRow {
  std::string name, type, op;
  double forward_ms = 0, backward_ms = 0;
};

struct ProfileTable {
  int64_t steps = 0;
  double step_ms = 0;                          // start of the step to its last mark, per step
  std::vector<ProfileRow> layers;              // plan order
  std::vector<std::pair<std::string, double>> ops;     // op -> forward + backward ms, largest first
  std::vector<std::pair<std::string, double>> phases;  // in step order
  std::vector<std::pair<std::string, double>> parts;   // part -> ms (inside the ops above), largest first
  std::string format() const;                  // a human table: phases, ops, then the 15 slowest layers
  nlohmann::json json() const;
};

class StepProfile final : public graph::LayerObserver, public ops::PartListener {
 public:
  explicit StepProfile(runner::StepRunner& runner);
  ~StepProfile() override;
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  void begin_step();
  void end_step();
  ProfileTable table() const;

  void layer_begin(size_t node, bool backward) override;
  void layer_end(size_t node, bool backward) override;
  void phase_end(const char* phase) override;
  void part_begin(const char* name) override;
  void part_end() override;

 private:
  struct Span {
    int64_t node = -1;  // -1: a phase or a part
    bool backward = false;
    std::string phase;  // a phase's or a part's name
    bool part = false;
    size_t begin = 0, end = 0;
  };
  runner::StepRunner& runner_;
  std::unique_ptr<runner::StepTimeline> timeline_;
  std::vector<Span> spans_;
  size_t step_start_ = 0, last_phase_ = 0, layer_start_ = 0, part_start_ = 0;
  const char* open_part_ = nullptr;
  ops::PartListener* listener_before_ = nullptr;
  int64_t steps_ = 0;
  double step_ms_ = 0;
  std::vector<double> forward_ms_, backward_ms_;  // per plan node, summed over steps
  std::vector<std::pair<std::string, double>> phase_ms_;
  std::map<std::string, double> part_ms_;
};

}  // namespace fastnn::bench
