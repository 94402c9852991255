#include "trainer/bench/step_profile.h"

#include <algorithm>
#include <cstdio>

#include "core/check.h"
#include "trainer/runner/step_runner.h"

namespace fastnn::bench {

StepProfile::StepProfile(runner::StepRunner& runner) : runner_(runner), timeline_(runner.make_timeline()) {
  const size_t n = runner_.graph().plan().nodes().size();
  forward_ms_.assign(n, 0.0);
  backward_ms_.assign(n, 0.0);
  runner_.set_layer_observer(this);
  listener_before_ = ops::set_part_listener(this);
}

StepProfile::~StepProfile() {
  runner_.set_layer_observer(nullptr);
  ops::set_part_listener(listener_before_);
}

void StepProfile::begin_step() {
  spans_.clear();
  timeline_->start();
  step_start_ = last_phase_ = timeline_->mark();
}

void StepProfile::layer_begin(size_t, bool) { layer_start_ = timeline_->mark(); }

void StepProfile::layer_end(size_t node, bool backward) {
  spans_.push_back({.node = static_cast<int64_t>(node), .backward = backward, .begin = layer_start_, .end = timeline_->mark()});
}

void StepProfile::phase_end(const char* phase) {
  const size_t m = timeline_->mark();
  spans_.push_back({.phase = phase, .begin = last_phase_, .end = m});
  last_phase_ = m;
}

// Parts do not nest (ops/part_marks.h); should a kernel nest them anyway, the outer one ends where the
// inner one begins and the profile goes on rather than failing the run it measures.
void StepProfile::part_begin(const char* name) {
  if (open_part_) part_end();
  open_part_ = name;
  part_start_ = timeline_->mark();
}

void StepProfile::part_end() {
  if (!open_part_) return;  // the inner part of a nested pair closed it already
  spans_.push_back({.phase = open_part_, .part = true, .begin = part_start_, .end = timeline_->mark()});
  open_part_ = nullptr;
}

void StepProfile::end_step() {
  const std::vector<double> us = timeline_->resolve_us();
  FASTNN_CHECK(!us.empty(), "StepProfile: end_step without begin_step");
  for (const Span& s : spans_) {
    const double ms = (us[s.end] - us[s.begin]) / 1000.0;
    if (s.node >= 0) {
      (s.backward ? backward_ms_ : forward_ms_)[static_cast<size_t>(s.node)] += ms;
      continue;
    }
    if (s.part) {
      part_ms_[s.phase] += ms;
      continue;
    }
    auto it = std::find_if(phase_ms_.begin(), phase_ms_.end(), [&](const auto& p) { return p.first == s.phase; });
    if (it == phase_ms_.end()) phase_ms_.push_back({s.phase, ms});
    else it->second += ms;
  }
  step_ms_ += (us[last_phase_] - us[step_start_]) / 1000.0;
  ++steps_;
}

ProfileTable StepProfile::table() const {
  ProfileTable t;
  t.steps = steps_;
  if (steps_ == 0) return t;
  const double n = static_cast<double>(steps_);
  t.step_ms = step_ms_ / n;
  const auto& nodes = runner_.graph().plan().nodes();
  std::map<std::string, double> by_op;
  for (size_t i = 0; i < nodes.size(); ++i) {
    ProfileRow r{nodes[i].name, nodes[i].type, nodes[i].op, forward_ms_[i] / n, backward_ms_[i] / n};
    by_op[r.op] += r.forward_ms + r.backward_ms;
    t.layers.push_back(std::move(r));
  }
  t.ops.assign(by_op.begin(), by_op.end());
  std::sort(t.ops.begin(), t.ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, ms] : phase_ms_) t.phases.push_back({name, ms / n});
  for (const auto& [name, ms] : part_ms_) t.parts.push_back({name, ms / n});
  std::sort(t.parts.begin(), t.parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return t;
}

std::string ProfileTable::format() const {
  std::string out = str("profile over ", steps, " step(s): ", step_ms, " ms per step\n");
  char line[256];
  auto share = [&](double ms) { return step_ms > 0 ? 100.0 * ms / step_ms : 0.0; };
  out += "  phase                      ms/step   share\n";
  for (const auto& [name, ms] : phases) {
    std::snprintf(line, sizeof line, "  %-24s %9.3f  %5.1f%%\n", name.c_str(), ms, share(ms));
    out += line;
  }
  out += "  op (forward + backward)    ms/step   share\n";
  for (const auto& [name, ms] : ops) {
    std::snprintf(line, sizeof line, "  %-24s %9.3f  %5.1f%%\n", name.c_str(), ms, share(ms));
    out += line;
  }
  if (!parts.empty()) out += "  part (inside the ops)      ms/step   share\n";
  for (const auto& [name, ms] : parts) {
    std::snprintf(line, sizeof line, "  %-24s %9.3f  %5.1f%%\n", name.c_str(), ms, share(ms));
    out += line;
  }
  std::vector<const ProfileRow*> slow;
  for (const ProfileRow& r : layers) slow.push_back(&r);
  std::sort(slow.begin(), slow.end(), [](const ProfileRow* a, const ProfileRow* b) {
    return a->forward_ms + a->backward_ms > b->forward_ms + b->backward_ms;
  });
  if (slow.size() > 15) slow.resize(15);
  out += "  slowest layers                               forward  backward  op\n";
  for (const ProfileRow* r : slow) {
    std::snprintf(line, sizeof line, "  %-42.42s %9.3f %9.3f  %s\n", r->name.c_str(), r->forward_ms, r->backward_ms,
                  r->op.c_str());
    out += line;
  }
  return out;
}

nlohmann::json ProfileTable::json() const {
  nlohmann::json layers_j = nlohmann::json::array();
  for (const ProfileRow& r : layers)
    layers_j.push_back({{"name", r.name}, {"type", r.type}, {"op", r.op}, {"forward_ms", r.forward_ms},
                        {"backward_ms", r.backward_ms}});
  nlohmann::json ops_j = nlohmann::json::object(), phases_j = nlohmann::json::object(),
                 parts_j = nlohmann::json::object();
  for (const auto& [k, v] : ops) ops_j[k] = v;
  for (const auto& [k, v] : phases) phases_j[k] = v;
  for (const auto& [k, v] : parts) parts_j[k] = v;
  return {{"steps", steps}, {"step_ms", step_ms}, {"phases", phases_j}, {"ops", ops_j}, {"parts", parts_j},
          {"layers", layers_j}};
}

}  // namespace fastnn::bench
