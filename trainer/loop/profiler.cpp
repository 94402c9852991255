#include "trainer/loop/profiler.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "trainer/graph/statistics.h"
#include "trainer/runner/step_runner.h"

namespace fastnn::loop {

std::string chrome_trace_json(const std::vector<TraceEvent>& events, int64_t step, const std::string& net_name) {
  nlohmann::json list = nlohmann::json::array();
  // Metadata events name the process and thread in the viewer.
  list.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0},
                  {"args", {{"name", str("fastnn ", net_name, " step ", step)}}}});
  list.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "train loop"}}}});
  for (const TraceEvent& e : events) {
    nlohmann::json j{{"name", e.name}, {"cat", e.category}, {"ph", "X"}, {"pid", 0}, {"tid", 0},
                     {"ts", e.ts_us}, {"dur", e.dur_us}};
    nlohmann::json args{{"step", step}};
    if (!e.type.empty()) args["type"] = e.type, args["op"] = e.op;
    j["args"] = std::move(args);
    list.push_back(std::move(j));
  }
  nlohmann::json doc{{"traceEvents", std::move(list)}, {"displayTimeUnit", "ms"}};
  return doc.dump(1);
}

StepProfiler::StepProfiler(int64_t every_n, std::string run_dir, graph::Graph& graph,
                           std::unique_ptr<runner::StepTimeline> timeline, std::function<void(graph::LayerObserver*)> attach)
    : every_n_(every_n), run_dir_(std::move(run_dir)), graph_(graph), timeline_(std::move(timeline)),
      attach_(std::move(attach)) {}

StepProfiler::StepProfiler(int64_t every_n, std::string run_dir, graph::Graph& graph)
    : StepProfiler(every_n, std::move(run_dir), graph, std::make_unique<runner::HostTimeline>(),
                   [&graph](graph::LayerObserver* o) { graph.set_layer_observer(o); }) {}

StepProfiler::StepProfiler(int64_t every_n, std::string run_dir, runner::StepRunner& runner)
    : StepProfiler(every_n, std::move(run_dir), runner.graph(), runner.make_timeline(),
                   [&runner](graph::LayerObserver* o) { runner.set_layer_observer(o); }) {}

StepProfiler::~StepProfiler() {
  if (active_) attach_(nullptr);
}

void StepProfiler::begin_step(int64_t step) {
  active_ = profiles(step);
  if (!active_) return;
  step_ = step + 1;
  events_.clear();
  pending_.clear();
  timeline_->start();
  last_mark_ = timeline_->mark();
  attach_(this);
}

void StepProfiler::mark(const char* phase) {
  if (!active_) return;
  const size_t m = timeline_->mark();
  pending_.push_back({.event = {.name = phase, .category = "step"}, .begin = last_mark_, .end = m});
  last_mark_ = m;
}

std::string StepProfiler::end_step() {
  if (!active_) return "";
  active_ = false;
  attach_(nullptr);
  const std::vector<double> us = timeline_->resolve_us();
  for (Pending& p : pending_) {
    p.event.ts_us = us[p.begin];
    p.event.dur_us = us[p.end] - us[p.begin];
    events_.push_back(std::move(p.event));
  }
  pending_.clear();
  const std::string path = str(run_dir_, "/timeline-", step_, ".json");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw_io_error(tmp, "create the profiler's timeline");
    f << chrome_trace_json(events_, step_, graph_.plan().net_name());
    if (!f.flush()) throw_io_error(tmp, "write the profiler's timeline");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError(str("profiler: cannot rename ", tmp, " to ", path, ": ", ec.message()));
  return path;
}

void StepProfiler::layer_begin(size_t, bool) { layer_start_ = timeline_->mark(); }

void StepProfiler::layer_end(size_t node, bool backward) {
  const graph::PlanNode& n = graph_.plan().nodes()[node];
  pending_.push_back({.event = {.name = n.name, .category = backward ? "backward" : "forward", .type = n.type, .op = n.op},
                      .begin = layer_start_,
                      .end = timeline_->mark()});
}

void print_model_statistics(const graph::Graph& graph) {
  std::printf("%s", graph::format_model_statistics(graph::model_statistics(graph.plan())).c_str());
  std::fflush(stdout);
}

}  // namespace fastnn::loop
