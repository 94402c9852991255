#include "trainer/runner/step_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

#include "core/check.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/job_config.h"
#include "trainer/runner/cpu_layout.h"
#include "trainer/comm/bucketed_allreduce.h"
#include "trainer/comm/communicator.h"
#include "trainer/runner/head_step.h"
#include "trainer/runner/update_order.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/random.h"
#include "trainer/optim/gradient_ops.h"

namespace fastnn::runner {

double StepRunner::time_ms(const std::function<void()>& fn) {
  synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<checkpoint::RowShardSlice> StepRunner::sharded_row_layout() {
  std::vector<checkpoint::RowShardSlice> out = sharded_rows();
  for (checkpoint::RowShardSlice& r : out) r.data = nullptr;
  return out;
}

std::optional<StepResult> StepRunner::queue_train(const Tensor& images, const Tensor& labels, uint64_t step, float lr) {
  StepResult now = train(images, labels, step, lr);
  return std::exchange(held_, now);
}

std::optional<StepResult> StepRunner::drain() { return std::exchange(held_, std::nullopt); }

void StepRunner::set_label_mix(const std::vector<double>& own_weights) {
  if (std::any_of(own_weights.begin(), own_weights.end(), [](double w) { return w != 1; }))
    throw ConfigError(str("mixup / CutMix: the ", device_name(target().device),
                          " runner does not mix labels (only the CPU runner without a classifier head does)"));
}

Layout layout_for(const JobConfig& c, Device device) {
  if (c.data_format() == "NHWC") return Layout::kNHWC;
  if (c.data_format() == "NCHW") return Layout::kNCHW;
  return device == Device::kCuda ? Layout::kNHWC : Layout::kNCHW;
}

bool fuse_ops_for(const JobConfig& c, Device device) {
  return c.has_fuse_ops() ? c.fuse_ops() : device == Device::kCuda;
}

StepRunnerOptions step_runner_options(const JobConfig& c, const ComputeTarget& target) {
  StepRunnerOptions o;
  o.target = target;
  o.batch_size = c.batch_size();
  o.seed = static_cast<uint64_t>(c.seed());
  o.label_smoothing = c.label_smoothing();
  o.deterministic = c.deterministic();
  o.exhaustive_conv_search = c.conv_search() == "exhaustive";
  o.pad_conv_channels = c.conv_pad_channels();
  o.depthwise_cudnn = c.depthwise_conv() == "cudnn";
  o.conv_graph_api = c.conv_api() == "graph";
  o.fuse = fuse_ops_for(c, target.device);
  o.fuse_by_layout = target.device == Device::kCpu && !c.has_fuse_ops();
  o.fuse_conv_bn = c.fuse_conv_bn();
  o.cuda_graphs = c.cuda_graph();
  o.layout = layout_for(c, target.device);
  o.auto_cpu_layout = target.device == Device::kCpu && c.data_format() == "auto";
  o.allreduce_bucket_mb = c.allreduce_bucket_mb();
  // adamw, lars and lamb apply weight_decay themselves, not as an L2 term in the gradient.
  o.weight_decay = applies_weight_decay_itself(c.optimizer()) ? 0.0 : c.weight_decay();
  o.max_gradient_norm = c.has_max_gradient_norm() ? c.max_gradient_norm() : 0.0;
  o.optimizer = optimizer_options(c);
  o.scaling = loss_scaler_options(c, target.dtype);
  o.input_dtype = c.input_dtype();
  o.trainable_scopes = split_list(c.trainable_scopes());
  o.accumulation_steps = std::max(1, c.gradient_accumulation_steps());
  o.cpu_bf16 = target.device == Device::kCpu && c.precision() == "bf16";
  return o;
}

StepRunnerOptions forward_only(StepRunnerOptions o) {
  o.fuse_conv_bn = false;
  o.accumulation_steps = 1;  // a training-only split: eval of a CPU run with it may run on a GPU
  return o;
}

std::vector<size_t> trainable_indices(const std::vector<std::string>& names, const std::vector<std::string>& scopes) {
  std::vector<size_t> out;
  for (size_t i = 0; i < names.size(); ++i)
    if (scopes.empty() ||
        std::any_of(scopes.begin(), scopes.end(), [&](const std::string& s) { return names[i].starts_with(s); }))
      out.push_back(i);
  for (const std::string& scope : scopes) {
    if (std::any_of(names.begin(), names.end(), [&scope](const std::string& n) { return n.starts_with(scope); })) continue;
    std::vector<std::string> prefixes;  // every scope of the model: "a/", "a/b/", ...
    for (const std::string& n : names)
      for (size_t at = n.find('/'); at != std::string::npos; at = n.find('/', at + 1)) prefixes.push_back(n.substr(0, at));
    std::sort(prefixes.begin(), prefixes.end());
    prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());
    const std::vector<std::string> near = closest_names(prefixes, scope);
    throw ConfigError(str("trainable_scopes: \"", scope, "\" matches no parameter of the model",
                          near.empty() ? "" : str("; did you mean ", format_choices(near), "?"),
                          " (print_model_statistics lists the parameter names)"));
  }
  return out;
}

std::vector<ParamRef> select_trainable(const std::vector<ParamRef>& all, const std::vector<std::string>& scopes) {
  std::vector<std::string> names;
  for (const ParamRef& p : all) names.push_back(p.name);
  std::vector<ParamRef> out;
  for (size_t i : trainable_indices(names, scopes)) out.push_back(all[i]);
  return out;
}

std::pair<Tensor, Tensor> random_host_batch(const graph::Graph& g, uint64_t seed) {
  // The same images in either layout: drawn in NCHW order, then transposed for an NHWC graph.
  const bool nhwc = g.layout() == Layout::kNHWC;
  const Shape& s = g.input_shape();
  Tensor images = Tensor::empty(nhwc ? Shape{s[0], s[3], s[1], s[2]} : s, DType::kF32, Device::kCpu, Layout::kNCHW);
  float* x = images.data<float>();
  for (int64_t i = 0; i < images.numel(); ++i)
    x[i] = 2.0f * ops::uniform01(ops::philox_word(seed, 1, static_cast<uint64_t>(i))) - 1.0f;
  if (nhwc) images = ops::to_nhwc(images);
  Tensor labels = Tensor::empty({g.batch_size()}, DType::kI32);
  int32_t* l = labels.data<int32_t>();
  for (int64_t i = 0; i < g.batch_size(); ++i)
    l[i] = static_cast<int32_t>(ops::philox_word(seed, 2, static_cast<uint64_t>(i)) % static_cast<uint32_t>(g.num_classes()));
  return {images, labels};
}

std::vector<size_t> match_variables(const std::vector<graph::NamedTensor>& variables,
                                    const std::vector<NamedArray>& arrays) {
  std::vector<size_t> out;
  for (const NamedArray& a : arrays) {
    size_t i = 0;
    while (i < variables.size() && variables[i].name != a.name) ++i;
    if (i == variables.size()) throw FormatError(str("the model has no variable named ", a.name));
    if (static_cast<int64_t>(a.data.size()) != variables[i].value.numel())
      throw FormatError(str(a.name, ": ", a.data.size(), " values for a variable of ", variables[i].value.numel()));
    out.push_back(i);
  }
  return out;
}

namespace {

// Rows [first, first + count) of a batch (images or labels), copied: tensors have no views.
Tensor batch_rows(const Tensor& t, int64_t first, int64_t count) {
  Shape shape = t.shape();
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(shape[0]);
  shape[0] = count;
  Tensor out = Tensor::empty(shape, t.dtype(), Device::kCpu, t.layout());
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + static_cast<size_t>(first) * row_bytes,
              static_cast<size_t>(count) * row_bytes);
  return out;
}

std::vector<NamedArray> copy_out(const std::vector<graph::NamedTensor>& tensors) {
  std::vector<NamedArray> out;
  for (const graph::NamedTensor& t : tensors) out.push_back({t.name, t.value.to_vector<float>()});
  return out;
}

// The backbone's parameters, and a replicated head's weights as one more.
std::vector<ParamRef> model_params(const graph::Graph& g, HeadStep* head) {
  std::vector<ParamRef> p = g.param_refs();
  if (head && !head->sharded()) p.push_back(head->param());
  return p;
}

// An NHWC inference graph folds each batch norm into the convolution before it where the CPU has that
// kernel (oneDNN's; ops/conv_bn_fold_dnnl.cpp). The relu and residual add after the batch norm join its
// node first (fuse_ops, bitwise the unfused plan), so that they fold too.
bool folds_batch_norms(const StepRunnerOptions& o) { return o.inference && o.layout == Layout::kNHWC; }

// Training and evaluation graphs with cpu_bf16 take the registry whose convolutions multiply in bf16;
// inference graphs compute their folded convolutions in bf16 instead (fold_in_bf16).
const ops::OpRegistry* cpu_registry(const StepRunnerOptions& o) {
  return o.cpu_bf16 && !o.inference ? &graph::cpu_bf16_op_registry() : nullptr;
}

// precision=bf16 on the CPU (training, evaluation): refused where it would silently compute f32.
void check_cpu_bf16(const NetDef& net, Layout layout, bool layout_was_auto) {
  if (!ops::cpu_bf16_available())
    throw ConfigError(str("precision bf16 on the CPU needs oneDNN with bf16 instructions (AVX512_BF16 or AMX); "
                          "this CPU's kernels: ", ops::cpu_kernels_description(), ". Use precision fp32 here"));
  if (layout != Layout::kNHWC)
    throw ConfigError(str("precision bf16 on the CPU computes the NHWC convolutions in bfloat16, but ", net.name(),
                          " runs in NCHW here (data_format ", layout_was_auto ? "auto chose NCHW: a layer has no NHWC CPU kernel" : "NCHW",
                          "); use data_format NHWC or precision fp32"));
}

// The layers that multiply in bf16.
int bf16_layers(const graph::NetPlan& plan) {
  int n = 0;
  for (const graph::PlanNode& node : plan.nodes()) n += graph::multiplies_in_cpu_bf16(node.op);
  return n;
}

class CpuStepRunner final : public StepRunner {
 public:
  CpuStepRunner(const NetDef& net, const StepRunnerOptions& o)
      : o_(o),
        graph_(net, {.batch_size = o.batch_size, .seed = o.seed, .registry = cpu_registry(o),
                     .fuse = o.fuse || folds_batch_norms(o), .layout = o.layout,
                     .fuse_conv_bn = o.fuse_conv_bn, .fold_batch_norms = folds_batch_norms(o),
                     .fold_in_bf16 = o.cpu_bf16 && folds_batch_norms(o), .fold_job_images = o.job_images,
                     .inference = o.inference,
                     .draw_variables = o.draw_variables, .keep = o.keep_layers}),
        step_(graph_, {.label_smoothing = o.label_smoothing, .class_weights = o.class_weights}),
        head_(o.head ? std::make_unique<HeadStep>(*o.head, o.host_comm, o.optimizer) : nullptr),
        params_(o.inference ? std::vector<ParamRef>{} : model_params(graph_, head_.get())),
        trainable_(select_trainable(params_, o.trainable_scopes)),
        optimizer_(o.inference ? nullptr : make_optimizer(o.optimizer, trainable_)) {
    FASTNN_CHECK(!(o.inference && o.head), "an inference step runner takes no classifier head");
    FASTNN_CHECK(o.target.device == Device::kCpu && o.target.dtype == DType::kF32, "CPU step runner for ",
                 o.target.describe());
    if (cpu_registry(o) && bf16_layers(graph_.plan()) == 0)
      throw ConfigError(str("precision bf16 on the CPU computes the convolutions and fully connected layers in "
                            "bfloat16; ", net.name(), " has none (use precision fp32)"));
    if (o.host_comm && o.host_comm->world_size() > 1)
      grads_ = std::make_unique<BucketedAllreduce>(*o.host_comm, grad_buffers(params_),
                                                   bucket_bytes_from_mib(o.allreduce_bucket_mb));
  }
  const ComputeTarget& target() const override { return o_.target; }
  graph::Graph& graph() override { return graph_; }
  BatchFormat batch_format() const override {
    return {.layout = o_.layout == Layout::kNHWC ? Layout::kNHWC : Layout::kNCHW};
  }

  StepResult train(const Tensor& images, const Tensor& labels, uint64_t step, float lr) override {
    check_host_batch(images);
    FASTNN_CHECK(!o_.inference, "train() on an inference step runner");
    StepResult r;
    if (head_) {
      graph_.forward(images, true, step);
      r = head_->train(graph_, labels, step);
      graph_.backward();
    } else if (o_.accumulation_steps > 1) {
      r = accumulate(images, labels, step);
    } else {
      r = step_.train(images, labels, step);
    }
    phase("forward_backward");
    HeadStep* sharded = head_ && head_->sharded() ? head_.get() : nullptr;
    UpdateStages stages;
    if (grads_) stages.average = [this] {
      grads_->average();
      phase("allreduce");
    };
    if (o_.weight_decay > 0) stages.decay = [this, sharded] {
      add_weight_decay(trainable_, o_.weight_decay);
      if (sharded) sharded->add_weight_decay(o_.weight_decay);
    };
    stages.check = [this, sharded] {
      double norm = global_norm(trainable_);
      if (sharded) norm = std::sqrt(norm * norm + sharded->norm_squared());  // the same on every rank
      return GradientCheck{.norm = norm, .overflow = !std::isfinite(norm)};
    };
    stages.apply = [this, lr, sharded](float factor) {
      if (factor != 1.0f) scale_gradients(trainable_, factor);
      optimizer_->step(lr);
      if (sharded) {
        if (factor != 1.0f) sharded->scale(factor);
        sharded->step(lr);
      }
    };
    stats_.last_global_norm = apply_update(stages, {.max_gradient_norm = o_.max_gradient_norm}).norm;
    phase("optimizer");
    return r;
  }
  void set_label_mix(const std::vector<double>& own_weights) override {
    if (head_) return StepRunner::set_label_mix(own_weights);  // the head has its own losses
    const int64_t samples = o_.accumulation_steps * graph_.batch_size();
    FASTNN_CHECK(own_weights.empty() || static_cast<int64_t>(own_weights.size()) == samples, "mixup / CutMix: ",
                 own_weights.size(), " label weights for a step of ", samples, " samples");
    sample_mix_ = own_weights;
    step_.set_label_mix(part_weights(0));
  }
  StepResult evaluate(const Tensor& images, const Tensor& labels) override {
    check_host_batch(images);
    if (!head_) return step_.evaluate(images, labels);
    graph_.forward(images, false);
    return head_->evaluate(graph_, labels);
  }
  Tensor host_logits() override { return head_ ? Tensor() : graph_.output(0); }
  std::pair<Tensor, Tensor> synthetic_batch(uint64_t seed) override { return random_host_batch(graph_, seed); }
  std::vector<NamedArray> export_optimizer_state() const override {
    if (!optimizer_) return {};
    std::vector<NamedArray> state = optimizer_->export_state();
    if (head_ && head_->sharded())
      for (NamedArray& a : head_->export_scalars()) state.push_back(std::move(a));
    return state;
  }
  void import_optimizer_state(const std::vector<NamedArray>& a) override {
    if (!head_ || !head_->sharded()) return optimizer_->import_state(a);
    std::vector<NamedArray> own;
    for (const NamedArray& n : a)
      if (!n.name.starts_with("Head/")) own.push_back(n);
    optimizer_->import_state(own);
    head_->import_scalars(a);
  }
  std::vector<checkpoint::RowShardSlice> sharded_rows() override {
    return head_ && head_->sharded() ? head_->row_slices() : std::vector<checkpoint::RowShardSlice>{};
  }
  void load_sharded_rows(checkpoint::RowShardReader& reader, bool optimizer) override {
    if (head_ && head_->sharded()) head_->load_rows(reader, optimizer);
  }
  std::vector<graph::NamedTensor> variables() override {
    std::vector<graph::NamedTensor> v = graph_.variables();
    if (head_ && !head_->sharded()) v.push_back(head_->variable());
    return v;
  }
  std::vector<NamedArray> host_variables() override { return copy_out(variables()); }
  void set_host_variables(const std::vector<NamedArray>& arrays) override {
    std::vector<graph::NamedTensor> vars = variables();
    const std::vector<size_t> at = match_variables(vars, arrays);
    for (size_t k = 0; k < arrays.size(); ++k)
      std::copy(arrays[k].data.begin(), arrays[k].data.end(), vars[at[k]].value.data<float>());
  }
  StepRunnerStats stats() const override { return stats_; }
  void set_layer_observer(graph::LayerObserver* observer) override {
    observer_ = observer;
    graph_.set_layer_observer(observer);
  }

  bool collective_evaluation() const override { return head_ && head_->sharded(); }

  void broadcast_variables() override {
    if (!grads_) return;
    for (graph::NamedTensor& v : variables())
      o_.host_comm->broadcast(std::span<float>(v.value.data<float>(), static_cast<size_t>(v.value.numel())), 0);
  }
  void average_state() override {
    if (!grads_) return;
    std::vector<std::span<float>> buffers;
    for (graph::NamedTensor& t : graph_.state())
      buffers.emplace_back(t.value.data<float>(), static_cast<size_t>(t.value.numel()));
    o_.host_comm->allreduce_average_packed(buffers);
  }

 private:
  // Gradient accumulation: the step's batch in parts of batch_size rows, forward and backward on each;
  // the parts' gradients are summed in accumulated_ and their mean left in the parameters' gradients,
  // where the update reads them.
  StepResult accumulate(const Tensor& images, const Tensor& labels, uint64_t step) {
    const int64_t parts = o_.accumulation_steps, rows = graph_.batch_size();
    if (images.shape().empty() || images.shape()[0] != parts * rows || labels.numel() != parts * rows)
      throw ConfigError(str("gradient accumulation: the step takes ", parts, " x ", rows, " images and labels, got ",
                            images.describe(), " and ", labels.describe()));
    if (accumulated_.empty())
      for (const ParamRef& p : params_) accumulated_.emplace_back(p.count);
    StepResult sum;
    for (int64_t k = 0; k < parts; ++k) {
      step_.set_label_mix(part_weights(k));
      const StepResult r = step_.train(batch_rows(images, k * rows, rows), batch_rows(labels, k * rows, rows), step,
                                       static_cast<uint64_t>(k));
      sum.loss += r.loss;
      sum.main_loss += r.main_loss;
      sum.aux_loss += r.aux_loss;
      sum.correct += r.correct;
      sum.correct_top5 += r.correct_top5;
      sum.examples += r.examples;
      for (size_t i = 0; i < params_.size(); ++i) {
        float* acc = accumulated_[i].data();
        float* g = params_[i].grad;
        const size_t n = params_[i].count;
        if (k == 0) std::copy(g, g + n, acc);
        else if (k + 1 < parts) for (size_t j = 0; j < n; ++j) acc[j] += g[j];
        else for (size_t j = 0; j < n; ++j) g[j] = (acc[j] + g[j]) / static_cast<float>(parts);
      }
    }
    const double n = static_cast<double>(parts);
    sum.loss /= n;
    sum.main_loss /= n;
    sum.aux_loss /= n;
    return sum;
  }
  void phase(const char* name) {
    if (observer_) observer_->phase_end(name);
  }
  // The CPU graph computes in f32 in its layout (data_format); a pipeline set up otherwise (uint8 for a
  // GPU, the other layout) is a caller's error.
  void check_host_batch(const Tensor& images) const {
    const Layout other = o_.layout == Layout::kNHWC ? Layout::kNCHW : Layout::kNHWC;
    if (images.dtype() != DType::kF32 || images.layout() == other)
      throw ConfigError(str("the CPU step takes float32 ", layout_name(o_.layout), " images, got ", images.describe()));
  }

  StepRunnerOptions o_;
  graph::Graph graph_;
  TrainStep step_;
  std::unique_ptr<HeadStep> head_;  // a classifier head after the embedding; null: TrainStep's loss
  std::vector<ParamRef> params_;
  std::vector<ParamRef> trainable_;  // params_ under trainable_scopes (all of them when none)
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<BucketedAllreduce> grads_;  // data parallel only
  std::vector<double> sample_mix_;  // set_label_mix: each sample's own-label weight, over all parts
  // Accumulated part k's slice of sample_mix_ (empty: unmixed).
  std::span<const double> part_weights(int64_t k) const {
    if (sample_mix_.empty()) return {};
    const auto rows = static_cast<size_t>(graph_.batch_size());
    return std::span<const double>(sample_mix_).subspan(static_cast<size_t>(k) * rows, rows);
  }
  std::vector<std::vector<float>> accumulated_;  // gradient accumulation: params_' gradients summed
  graph::LayerObserver* observer_ = nullptr;
  StepRunnerStats stats_;
};

}  // namespace

StepRunnerOptions with_cpu_choices(const NetDef& net, const StepRunnerOptions& o) {
  StepRunnerOptions chosen = o;
  if (o.target.device != Device::kCpu) return chosen;
  if (o.auto_cpu_layout) {
    chosen.layout = auto_cpu_layout(net, o);
    chosen.auto_cpu_layout = false;
  }
  if (o.fuse_by_layout) {
    chosen.fuse = chosen.layout == Layout::kNHWC && ops::use_fast_cpu_kernels();
    chosen.fuse_by_layout = false;
  }
  return chosen;
}

std::unique_ptr<StepRunner> make_step_runner(const NetDef& net, const StepRunnerOptions& o) {
  if (o.target.device != Device::kCpu) {
    if (o.accumulation_steps != 1)
      throw ConfigError(str("gradient accumulation is the CPU runner's; ", o.target.describe(), " updates every batch"));
    if (!o.class_weights.empty())
      throw ConfigError(str("class weights are the CPU runner's; ", o.target.describe(), " has an unweighted loss"));
    return make_cuda_step_runner(net, o);
  }
  const StepRunnerOptions chosen = with_cpu_choices(net, o);
  if (chosen.cpu_bf16 && !chosen.inference) check_cpu_bf16(net, chosen.layout, o.auto_cpu_layout);
  return std::make_unique<CpuStepRunner>(net, chosen);
}

#ifndef FASTNN_HAVE_CUDA
std::unique_ptr<StepRunner> make_cuda_step_runner(const NetDef&, const StepRunnerOptions&) {
  throw ConfigError("device=cuda: this fastnn was built without the CUDA backend");
}
#endif

}  // namespace fastnn::runner
