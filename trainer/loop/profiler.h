// ProfilerHook: every `profile_every_n_iters` steps, one training step is timed layer by layer and
// written as a Chrome trace (the JSON trace-event format read by chrome://tracing and Perfetto) to
// <run_dir>/timeline-<step>.json, where <step> is the global step after that update (TF's
// ProfilerHook names its files the same way).
//
//   StepProfiler prof(every_n, run_dir, graph);     // every_n <= 0: never profiles
//   prof.begin_step(step);                          // attaches to the graph when step+1 is a multiple
//   ... next batch ...        prof.mark("next_batch");
//   ... train step ...        prof.mark("train_step");   // the layer events nest inside it
//   ... optimizer ...         prof.mark("optimizer");
//   prof.end_step();                                 // writes the file, detaches
//
// Events (all "ph":"X" complete events, microseconds from the step's start, pid 0, tid 0):
// phases in category "step", each layer's forward (category "forward") and backward ("backward")
// with args {type, op, step}. The file is written to a temporary name and renamed, so a reader
// never sees half a trace. Threading: the thread that drives the graph.
//
// Built on a step runner, times come from the runner's timeline (step_timeline.h): wall clock on the
// CPU, CUDA events on the compute stream on a GPU, so each layer's time is the device's; phases the
// runner reports (LayerObserver::phase_end: "allreduce", "optimizer") appear as "step" events too.
// Built on a bare graph (tests), the host clock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainer/graph/graph.h"
#include "trainer/runner/step_timeline.h"

namespace fastnn::runner {
class StepRunner;
}  // namespace fastnn::runner

namespace fastnn::loop {

struct TraceEvent {
  std::string name, category;
  double ts_us = 0, dur_us = 0;
  std::string type, op;  // layers only
};

// The Chrome trace JSON for one step's events.
std::string chrome_trace_json(const std::vector<TraceEvent>& events, int64_t step, const std::string& net_name);

class StepProfiler final : public graph::LayerObserver {
 public:
  StepProfiler(int64_t every_n, std::string run_dir, graph::Graph& graph);
  StepProfiler(int64_t every_n, std::string run_dir, runner::StepRunner& runner);
  ~StepProfiler() override;
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  bool enabled() const { return every_n_ > 0; }
  // Whether the step that starts at global step `step` (0-based) is profiled.
  bool profiles(int64_t step) const { return every_n_ > 0 && (step + 1) % every_n_ == 0; }

  void begin_step(int64_t step);
  void mark(const char* phase);  // a "step" event from the previous mark (or begin) to now
  // Writes the trace when this step was profiled; returns its path ("" otherwise).
  std::string end_step();

  const std::vector<TraceEvent>& events() const { return events_; }

  void layer_begin(size_t node, bool backward) override;
  void layer_end(size_t node, bool backward) override;
  void phase_end(const char* phase) override { mark(phase); }

 private:
  // An event whose times are marks on the timeline, resolved when the step ends.
  struct Pending {
    TraceEvent event;
    size_t begin = 0, end = 0;
  };
  StepProfiler(int64_t every_n, std::string run_dir, graph::Graph& graph, std::unique_ptr<runner::StepTimeline> timeline,
               std::function<void(graph::LayerObserver*)> attach);

  int64_t every_n_;
  std::string run_dir_;
  graph::Graph& graph_;
  std::unique_ptr<runner::StepTimeline> timeline_;
  std::function<void(graph::LayerObserver*)> attach_;
  bool active_ = false;
  int64_t step_ = 0;
  size_t last_mark_ = 0, layer_start_ = 0;
  std::vector<Pending> pending_;
  std::vector<TraceEvent> events_;
};

// print_model_statistics: the parameter table, per-layer FLOPs and totals (graph/statistics.h) on
// stdout at the start of training.
void print_model_statistics(const graph::Graph& graph);

}  // namespace fastnn::loop
