// Optimizers over plain float32 buffers (the CPU master weights), with TensorFlow 1.x update rules.
//
// An Optimizer is built over a fixed list of parameters (ParamRef, trainer/params.h: a name and pointers the
// caller owns and keeps alive and in place for the optimizer's lifetime). step(lr) applies one update
// to every parameter from its gradient; gradients are read only. Each optimizer's state (slots such as
// Adam's m and v, and scalars such as its beta powers) is allocated at construction, initialised as TF
// does, and exposed as named float arrays so that checkpoints can save and restore it exactly:
//   "<param name>/<slot>"   one per parameter and slot, `count` floats (e.g. "conv1/weights/adam_m")
//   "<optimizer>/<scalar>"  one float (e.g. "adam/beta1_power")
//
// Threading: step() is called from one thread; the elementwise update of a parameter with at least
// kParallelMinElements floats is split over oneTBB workers. Every element is updated by the same float
// arithmetic whatever the split, so results are bitwise independent of the thread count.
//
// Errors: construction checks the parameter list (unique names, non-null buffers) and throws
// fastnn::Error; import_state throws fastnn::FormatError naming the missing, unknown or mis-sized array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "trainer/optim/update_rules.h"
#include "trainer/params.h"

namespace fastnn {

// A view of one state array inside an optimizer; valid while the optimizer lives.
struct StateArray {
  std::string name;
  float* data;
  size_t count;
};

// Parameters with at least this many floats are updated by several oneTBB workers.
inline constexpr size_t kParallelMinElements = size_t{1} << 15;

// Calls fn(begin, end) over [0, n): inline when n is small, else in parallel chunks.
template <typename Fn>
void parallel_elementwise(size_t n, Fn&& fn) {
  if (n < kParallelMinElements) {
    if (n > 0) fn(size_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, size_t{1} << 13),
                    [&](const tbb::blocked_range<size_t>& r) { fn(r.begin(), r.end()); });
}

// One update rule (update_rules.h) over every element of one parameter; s0 / s1: its slots (unused ones
// may be null).
template <typename Rule>
void apply_rule(const Rule& rule, const ParamRef& p, float* s0, float* s1) {
  float* w = p.value;
  const float* g = p.grad;
  const bool decay = p.decay;
  parallel_elementwise(p.count, [=](size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) optim::rule::apply_at(rule, static_cast<int64_t>(k), g[k], w, s0, s1, decay);
  });
}

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The config name: "sgd", "momentum", "adam", "adamweightdecay", "adamw", "lars", "lamb", "rmsprop", "adagrad",
  // "adadelta", "ftrl".
  const std::string& name() const { return name_; }
  const std::vector<ParamRef>& params() const { return params_; }

  // Applies one update with learning rate `lr` to every parameter.
  void step(float lr);
  // One update of a single-parameter optimizer restricted to some rows of it (PartialFC's lazy update):
  // `rows` (ascending) index rows of `row_len` elements; their gradients come compactly in
  // `compact_grad` (rows.size() * row_len floats, in rows' order) instead of the ParamRef's grad. The
  // other rows and their slots are untouched; scalars (adam's beta powers) advance once, as in step().
  void step_rows(float lr, std::span<const int64_t> rows, int64_t row_len, const float* compact_grad);

  // Views of every state array, in a fixed order (slots by parameter, then scalars). Writing through
  // them changes the optimizer's state.
  std::vector<StateArray> state();
  std::vector<NamedArray> export_state() const;
  // Replaces the whole state. Every array state() names must be present with the same size, and no other.
  void import_state(const std::vector<NamedArray>& arrays);

 protected:
  Optimizer(std::string name, std::vector<ParamRef> params);

  // Registers slot "<param>/<slot>" for every parameter, filled with `init`; returns its index.
  size_t add_slot(const std::string& slot, float init);
  float* slot(size_t slot_index, size_t param_index) { return slots_[slot_index].data[param_index].data(); }
  // Registers scalar "<optimizer>/<name>" initialised to `init`; the pointer stays valid.
  float* add_scalar(const std::string& name, float init);

  // Applies `rule` to parameter i (its slots s0 / s1): every element, or under step_rows() the selected
  // rows. Each optimizer's update() calls it.
  template <typename Rule>
  void apply(const Rule& rule, size_t i, float* s0, float* s1) {
    if (!rows_) return apply_rule(rule, params_[i], s0, s1);
    const RowSelection sel = *rows_;
    float* w = params_[i].value;
    const bool decay = params_[i].decay;
    parallel_elementwise(sel.rows.size(), [=](size_t b, size_t e) {  // by rows: no division per element
      for (size_t j = b; j < e; ++j) {
        const int64_t base = sel.rows[j] * sel.len;
        const float* g = sel.grad + static_cast<int64_t>(j) * sel.len;
        for (int64_t at = 0; at < sel.len; ++at) optim::rule::apply_at(rule, base + at, g[at], w, s0, s1, decay);
      }
    });
  }

  // Whether the update in progress is step_rows()'s (the gradient is then not the ParamRef's).
  bool updating_rows() const { return rows_ != nullptr; }

  // Hooks of step(): begin_step once, update once per parameter, end_step once.
  virtual void begin_step(float lr) {}
  virtual void update(size_t param_index, float lr) = 0;
  virtual void end_step() {}

 private:
  struct Slot {
    std::string name;
    std::vector<std::vector<float>> data;  // per parameter
  };
  struct RowSelection {
    std::span<const int64_t> rows;
    int64_t len;
    const float* grad;
  };
  const RowSelection* rows_ = nullptr;  // set during step_rows()
  std::string name_;
  std::vector<ParamRef> params_;
  std::vector<Slot> slots_;
  std::deque<std::pair<std::string, float>> scalars_;  // deque: stable addresses
};

}  // namespace fastnn
