#include "trainer/loop/step_runner.h"

#include <chrono>

#include "core/check.h"
#include "trainer/ops/random.h"
#include "trainer/optim/gradient_ops.h"

namespace fastnn::loop {

double StepRunner::time_ms(const std::function<void()>& fn) {
  synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

StepRunnerOptions step_runner_options(const JobConfig& c, const ComputeTarget& target) {
  StepRunnerOptions o;
  o.target = target;
  o.batch_size = c.batch_size();
  o.seed = static_cast<uint64_t>(c.seed());
  o.label_smoothing = c.label_smoothing();
  o.deterministic = c.deterministic();
  o.allreduce_bucket_mb = c.allreduce_bucket_mb();
  o.weight_decay = c.weight_decay();
  o.max_gradient_norm = c.has_max_gradient_norm() ? c.max_gradient_norm() : 0.0;
  o.optimizer = optimizer_options(c);
  o.scaling = loss_scaler_options(c, target.dtype);
  return o;
}

std::pair<Tensor, Tensor> random_host_batch(const graph::Graph& g, uint64_t seed) {
  Tensor images = Tensor::empty(g.input_shape(), DType::kF32, Device::kCpu, Layout::kNCHW);
  float* x = images.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i)
    x[i] = 2.0f * ops::uniform01(ops::philox_word(seed, 1, static_cast<uint64_t>(i))) - 1.0f;
  Tensor labels = Tensor::empty({g.batch_size()}, DType::kI32);
  int32_t* l = labels.data<int32_t>();
  for (int64_t i = 0; i < g.batch_size(); ++i)
    l[i] = static_cast<int32_t>(ops::philox_word(seed, 2, static_cast<uint64_t>(i)) % static_cast<uint32_t>(g.num_classes()));
  return {images, labels};
}

namespace {

std::vector<NamedArray> copy_out(const std::vector<graph::NamedTensor>& tensors) {
  std::vector<NamedArray> out;
  for (const graph::NamedTensor& t : tensors) out.push_back({t.name, t.value.to_vector<float>()});
  return out;
}

class CpuStepRunner final : public StepRunner {
 public:
  CpuStepRunner(const NetDef& net, const StepRunnerOptions& o)
      : o_(o), graph_(net, {.batch_size = o.batch_size, .seed = o.seed}),
        step_(graph_, {.label_smoothing = o.label_smoothing}), params_(graph_.param_refs()),
        optimizer_(make_optimizer(o.optimizer, params_)) {
    FASTNN_CHECK(o.target.device == Device::kCpu && o.target.dtype == DType::kF32, "CPU step runner for ",
                 o.target.describe());
  }
  const ComputeTarget& target() const override { return o_.target; }
  graph::Graph& graph() override { return graph_; }

  StepResult train(const Tensor& images, const Tensor& labels, uint64_t step, float lr) override {
    StepResult r = step_.train(images, labels, step);
    if (o_.weight_decay > 0) add_weight_decay(params_, o_.weight_decay);
    if (o_.max_gradient_norm > 0) stats_.last_global_norm = clip_by_global_norm(params_, o_.max_gradient_norm);
    optimizer_->step(lr);
    return r;
  }
  StepResult evaluate(const Tensor& images, const Tensor& labels) override { return step_.evaluate(images, labels); }
  std::pair<Tensor, Tensor> synthetic_batch(uint64_t seed) override { return random_host_batch(graph_, seed); }
  std::vector<NamedArray> export_optimizer_state() const override { return optimizer_->export_state(); }
  void import_optimizer_state(const std::vector<NamedArray>& a) override { optimizer_->import_state(a); }
  std::vector<NamedArray> host_variables() override { return copy_out(graph_.variables()); }
  StepRunnerStats stats() const override { return stats_; }

 private:
  StepRunnerOptions o_;
  graph::Graph graph_;
  TrainStep step_;
  std::vector<ParamRef> params_;
  std::unique_ptr<Optimizer> optimizer_;
  StepRunnerStats stats_;
};

}  // namespace

std::unique_ptr<StepRunner> make_step_runner(const NetDef& net, const StepRunnerOptions& o) {
  if (o.target.device == Device::kCpu) return std::make_unique<CpuStepRunner>(net, o);
  return make_cuda_step_runner(net, o);
}

#ifndef FASTNN_HAVE_CUDA
std::unique_ptr<StepRunner> make_cuda_step_runner(const NetDef&, const StepRunnerOptions&) {
  throw ConfigError("device=cuda: this fastnn was built without the CUDA backend");
}
#endif

}  // namespace fastnn::loop
