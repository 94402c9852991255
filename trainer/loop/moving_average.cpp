#include "trainer/loop/moving_average.h"

#include <algorithm>

#include "core/check.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/head/head_config.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/optim/optimizer.h"

namespace fastnn::loop {
namespace {

const float* host_f32(const graph::NamedTensor& v) {
  FASTNN_CHECK(v.value.dtype() == DType::kF32, "moving averages: ", v.name, " is ", dtype_name(v.value.dtype()),
               ", not f32 host memory");
  return v.value.data<float>();
}

}  // namespace

MovingAverages::MovingAverages(double decay, bool warmup, const std::vector<graph::NamedTensor>& variables)
    : decay_(decay), warmup_(warmup) {
  if (!(decay > 0 && decay < 1)) throw ConfigError(str("moving_average_decay must be in (0, 1), got ", decay));
  for (const graph::NamedTensor& v : variables) {
    const float* x = host_f32(v);
    shadows_.push_back({v.name, std::vector<float>(x, x + v.value.numel())});
  }
}

double MovingAverages::decay_at(int64_t steps_before) const {
  if (!warmup_) return decay_;
  const double t = static_cast<double>(steps_before);
  return std::min(decay_, (1.0 + t) / (10.0 + t));
}

void MovingAverages::update(const std::vector<graph::NamedTensor>& variables, int64_t steps_before) {
  FASTNN_CHECK(variables.size() == shadows_.size(), "moving averages: ", variables.size(), " variables, ",
               shadows_.size(), " shadows");
  const float one_minus_decay = static_cast<float>(1.0 - decay_at(steps_before));
  for (size_t i = 0; i < variables.size(); ++i) {
    const float* x = host_f32(variables[i]);
    float* s = shadows_[i].data.data();
    FASTNN_CHECK(variables[i].name == shadows_[i].name && static_cast<size_t>(variables[i].value.numel()) == shadows_[i].data.size(),
                 "moving averages: ", variables[i].name, " does not match ", shadows_[i].name);
    // Elementwise: the same float operations whatever the split, so bitwise independent of threads.
    parallel_elementwise(shadows_[i].data.size(), [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) s[k] -= one_minus_decay * (s[k] - x[k]);
    });
  }
}

void MovingAverages::restore(std::vector<NamedArray> shadows) {
  FASTNN_CHECK(shadows.size() == shadows_.size(), "moving averages: ", shadows.size(), " arrays restored, ",
               shadows_.size(), " variables");
  for (size_t i = 0; i < shadows.size(); ++i)
    FASTNN_CHECK(shadows[i].name == shadows_[i].name && shadows[i].data.size() == shadows_[i].data.size(),
                 "moving averages: ", shadows[i].name, " does not match ", shadows_[i].name);
  shadows_ = std::move(shadows);
}

std::unique_ptr<MovingAverages> make_moving_averages(const JobConfig& c, const std::vector<graph::NamedTensor>& variables,
                                                     const std::string& run_dir, int64_t start) {
  if (c.moving_average_decay() <= 0) return nullptr;
  if (head::uses_head(c))
    throw ConfigError(str("moving_average_decay is not available with a classifier head yet (loss_type=", c.loss_type(),
                          ": its rows are saved in shards the averages do not cover)"));
  auto ema = std::make_unique<MovingAverages>(c.moving_average_decay(), c.moving_average_warmup(), variables);
  if (start > 0) ema->restore(saved_moving_averages(variables, moving_average_dir(run_dir), start));
  return ema;
}

std::string moving_average_dir(const std::string& run_dir) { return run_dir + "/ema"; }

std::vector<NamedArray> saved_moving_averages(const std::vector<graph::NamedTensor>& variables, const std::string& dir,
                                              int64_t step) {
  const std::string prefix = str(dir, "/ckpt-", step);
  try {
    const checkpoint::LoadedCheckpoint l = checkpoint::load_checkpoint(prefix, {.optimizer = false});
    return checkpoint_variables(variables, l.weights.arrays(), l.prefix);
  } catch (const Error& e) {
    throw FormatError(str("the moving averages saved with step ", step, " (", prefix, ") do not load: ", e.what()));
  }
}

}  // namespace fastnn::loop
