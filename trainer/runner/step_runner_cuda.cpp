// The CUDA step runner (contract in step_runner.h).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/cuda/storage_types.h"
#include "trainer/runner/gradient_buckets_cuda.h"
#include "trainer/runner/head_step_cuda.h"
#include "trainer/runner/input_stages_cuda.h"
#include "trainer/runner/step_graphs_cuda.h"
#include "trainer/runner/step_kernels.h"
#include "trainer/runner/step_runner.h"
#include "trainer/runner/step_timeline.h"
#include "trainer/runner/update_order.h"
#include "trainer/optim/device_optimizer.h"
#include "trainer/optim/update_kernels.h"

namespace fastnn::runner {
namespace {

const ops::OpRegistry& cuda_registry() {
  static const ops::OpRegistry* registry = [] {
    auto* r = new ops::OpRegistry;  // lives for the process: kernels keep pointers into it
    ops::register_builtin_ops(*r);  // CPU and CUDA kernels of every op
    return r;
  }();
  return *registry;
}

void upload(const Tensor& host, Tensor& device) {
  cuda::copy_async(device, host);
  cuda::synchronize();  // `host` may die right after
}
void download(const Tensor& device, Tensor& host) {
  cuda::copy_async(host, device);
  cuda::synchronize();
}

template <typename Fn>
void with_type(DType dt, Fn&& fn) {
  cuda::with_storage_type(dt, "cuda step", std::forward<Fn>(fn));
}

// Read by the kernels as they are created (the graph's and the train step's).
void set_runner_policy(const StepRunnerOptions& o) {
  cuda::Policy p = cuda::policy();
  p.check_labels = o.check_labels;
  p.defer_label_checks = true;  // raised after each step's one read-back (train / evaluate below)
  p.deterministic = o.deterministic;
  p.conv_search = o.exhaustive_conv_search ? cuda::ConvAlgoSearch::kExhaustive : cuda::ConvAlgoSearch::kHeuristic;
  p.pad_conv_channels = o.pad_conv_channels;
  p.depthwise_cudnn = o.depthwise_cudnn;
  p.conv_graph_api = o.conv_graph_api;
  cuda::set_policy(p);
}

struct ParamState {
  std::string name;
  Tensor value, grad;  // the graph's (compute dtype)
  Tensor master, g32;  // f32; the same tensors as value / grad for f32 graphs
  bool decay = false;
};

// The graph's layer observer while a data-parallel step runs backward: launches buckets as they fill.
class CudaStepRunner final : public StepRunner, private graph::LayerObserver {
 public:
  CudaStepRunner(const NetDef& net, const StepRunnerOptions& o)
      : o_((cuda::init_backend(o.target.device_index), set_runner_policy(o), o)),
        graph_(net, {.batch_size = o.batch_size, .dtype = o.target.dtype, .device = Device::kCuda, .seed = o.seed,
                     .registry = &cuda_registry(), .upload = &upload, .fuse = o.fuse, .layout = o.layout, .fuse_conv_bn = o.fuse_conv_bn}),
        step_(graph_, {.label_smoothing = o.label_smoothing, .upload = &upload, .download = &download}),
        scaler_(o.target.dtype == DType::kF16 ? o.scaling : LossScalerOptions{}),
        input_(o.target.dtype, o.input, o.layout) {
    const DType dt = o.target.dtype;
    // f16/bf16: the f32 master copy starts from the CPU's f32 initial values (a batch-1 CPU graph with
    // the same seed), not from the rounded device values.
    std::vector<graph::NamedTensor> cpu_init;
    if (dt != DType::kF32) cpu_init = graph::Graph(net, {.batch_size = 1, .seed = o.seed}).parameters();
    std::vector<DeviceParam> dparams;
    const std::vector<graph::NamedTensor> params = graph_.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      ParamState p{params[i].name, params[i].value, params[i].grad, {}, {}, params[i].weight_decay};
      // f32 runs, and the parameters an f16/bf16 graph keeps in f32 (batch norm's): the graph's own
      // tensors are the master weights and the f32 gradient.
      if (dt == DType::kF32 || p.value.dtype() == DType::kF32) {
        p.master = p.value;
        p.g32 = p.grad;
      } else {
        FASTNN_CHECK(cpu_init.size() == params.size() && cpu_init[i].name == p.name, "cuda step: CPU init mismatch");
        p.master = cuda::to_device(cpu_init[i].value);
        p.g32 = Tensor::empty(p.value.shape(), DType::kF32, Device::kCuda);
      }
      // The update (update_order.h) prepares g32 from the graph's gradient: unscaled, plus weight decay.
      const float wd = (p.decay && o.weight_decay > 0) ? static_cast<float>(o.weight_decay) : 0.0f;
      const bool own = p.value.dtype() != DType::kF32;  // a compute-dtype copy of the master weights
      dparams.push_back({.name = p.name, .master = p.master.data<float>(), .grad = p.g32.data<float>(),
                         .count = p.master.numel(), .decay = p.decay, .source = p.grad.raw(),
                         .value = own ? p.value.raw() : nullptr, .weight_decay = wd, .dtype = p.value.dtype()});
      params_.push_back(std::move(p));
    }
    if (o.head) make_head(dparams);
    if (!o.trainable_scopes.empty()) {  // TF-slim's trainable_scopes: the optimizer sees only these
      std::vector<std::string> names;
      for (const DeviceParam& d : dparams) names.push_back(d.name);
      std::vector<DeviceParam> kept;
      for (size_t i : trainable_indices(names, o.trainable_scopes)) kept.push_back(std::move(dparams[i]));
      dparams = std::move(kept);
    }
    optimizer_ = std::make_unique<DeviceOptimizer>(
        o.optimizer, std::move(dparams),
        DeviceStepOptions{.compute = dt, .max_gradient_norm = o.max_gradient_norm, .loss_scaling = dt == DType::kF16,
                          .scaler = scaler_.rule(), .scaler_state = scaler_.state()});
    if (head_ && head_->sharded()) optimizer_->set_extra_statistics(head_->statistics());
    if (o.collectives) plan_buckets();
    cuda::synchronize();
  }

  ~CudaStepRunner() override {
    cudaStreamSynchronize(cuda::current_stream());
    if (queued_) cuda::forget_label_checks();  // a step never drained: its checks (maybe a graph's slots) go too
    for (QueuedResults& q : queued_results_)
      if (q.done) cudaEventDestroy(q.done);
  }

  const ComputeTarget& target() const override { return o_.target; }
  graph::Graph& graph() override { return graph_; }
  // uint8 NHWC in pinned memory unless input_dtype asks otherwise; always pinned. An NHWC graph takes
  // float batches in NHWC too (nothing to transpose on the device).
  BatchFormat batch_format() const override {
    BatchFormat f = batch_format_for(o_.input_dtype, {.dtype = DType::kU8, .layout = Layout::kNHWC});
    if (o_.layout == Layout::kNHWC) f.layout = Layout::kNHWC;
    f.allocator = input_.allocator();
    return f;
  }

  // The copy of the next step's batch starts now and overlaps the step the loop runs next.
  void prefetch(const Tensor& images, const Tensor& labels) override { input_.prefetch(images, labels); }

  StepResult train(const Tensor& images, const Tensor& labels, uint64_t step, float lr) override {
    FASTNN_CHECK(!queued_, "cuda step: train() with a queued step not drained (call drain() first)");
    // A sharded head all-gathers every rank's batch over NCCL, which is undefined for counts that differ
    // across ranks (the CPU head compares the sizes first); this compares with batch_size, which every
    // rank is given alike, on the host, without a collective, before anything is queued.
    if (head_ && head_->sharded() && o_.collectives)
      FASTNN_CHECK(images.dim(0) == o_.batch_size, "a sharded classifier head over NCCL takes batches of batch_size (",
                   o_.batch_size, ") samples on every rank; this rank's batch has ", images.dim(0),
                   " (NCCL's all-gather of different sizes across ranks is undefined)");
    auto [x, y] = input_.place(images, labels);
    if (o_.cuda_graphs) graphs_.note_batch(x, y);  // eager steps of this shape count towards a capture
    StepResult r;
    forward_backward([&] {
      if (head_) {
        r = head_train(x, y, step);  // the head's results, read before the update as below
        return;
      }
      r = step_.train(x, y, step);  // one read-back: losses and counts
      cuda::raise_label_errors();   // the loss and metric kernels' label checks, read with it: before the update
    }, y);
    input_.release();
    update(lr);
    phase("optimizer");
    graphs_.count_eager_step();
    return r;
  }

  // The step and its update are queued with nothing read back; the results block is copied into a
  // pinned slot behind them. The previous queued step's slot is read once its event has passed (by then
  // this step is queued behind it, so the device never waits for the host).
  std::optional<StepResult> queue_train(const Tensor& images, const Tensor& labels, uint64_t step, float lr) override {
    // A classifier head reads its results inside each step (PartialFC draws its sample from the labels):
    // its steps run as train() and their results are handed back one call late, as the base class does.
    if (head_) return std::exchange(head_held_, train(images, labels, step, lr));
    auto [x, y] = input_.place(images, labels);
    const int slot = next_queued_;
    next_queued_ ^= 1;
    if (!replay_captured(x, y, step, lr, slot)) {
      forward_backward([&] { step_.queue_train(x, y, step); }, y);
      update(lr);
      graphs_.count_eager_step();
    }
    input_.release();
    phase("optimizer");
    QueuedResults& q = queued_results_[slot];
    if (!q.host.defined()) {
      q.host = cuda::pinned_empty({step_.results_block().numel()}, DType::kU8);
      // A blocking wait: the loop thread sleeps until the step is done instead of spinning (CUDA's default
      // with fewer contexts than cores), and leaves its core to the input pipeline. The next step is
      // already queued when it waits, so waking a few microseconds late costs the device nothing.
      CUDA_CHECK(cudaEventCreateWithFlags(&q.done, cudaEventDisableTiming | cudaEventBlockingSync));
    }
    cuda::copy_async(q.host, step_.results_block());
    CUDA_CHECK(cudaEventRecord(q.done, cuda::current_stream()));
    q.label_checks = cuda::label_checks_queued();
    QueuedResults* previous = std::exchange(queued_, &q);  // this step stays queued if the previous one throws
    if (!previous) return std::nullopt;
    return results_of(*previous);
  }

  std::optional<StepResult> drain() override {
    if (head_) return std::exchange(head_held_, std::nullopt);
    if (!queued_) return std::nullopt;
    return results_of(*std::exchange(queued_, nullptr));
  }

  StepResult evaluate(const Tensor& images, const Tensor& labels) override {
    FASTNN_CHECK(!queued_, "cuda step: evaluate() with a queued step not drained (call drain() first)");
    graphs_.drop();  // evaluation may resize the graph's buffers the captured steps point into
    graphs_.release_retired();  // nothing is queued (checked above)
    auto [x, y] = input_.place(images, labels);
    StepResult r;
    if (head_) {
      graph_.forward(x, false);
      r = head_->evaluate(graph_, y);
    } else {
      r = step_.evaluate(x, y);
    }
    input_.release();
    cuda::raise_label_errors();
    return r;
  }
  Tensor host_logits() override { return head_ ? Tensor() : cuda::to_host(graph_.output(0)); }

  std::pair<Tensor, Tensor> synthetic_batch(uint64_t seed) override {
    auto [hx, hy] = random_host_batch(graph_, seed);
    Tensor x32 = cuda::to_device(hx);
    Tensor x = to_compute(x32);
    x.set_layout(graph_.layout());
    Tensor y = cuda::to_device(hy);
    cuda::synchronize();
    return {x, y};
  }

  void synchronize() override { cuda::synchronize(); }

  double time_ms(const std::function<void()>& fn) override {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaEventRecord(a, cuda::current_stream()));
    fn();
    CUDA_CHECK(cudaEventRecord(b, cuda::current_stream()));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
  }

  std::vector<NamedArray> export_optimizer_state() const override {
    std::vector<NamedArray> state = optimizer_->export_state();
    if (head_ && head_->sharded())  // the CPU runner's "Head/" scalars (head_step_cuda.h)
      for (NamedArray& a : head_->export_scalars(state)) state.push_back(std::move(a));
    return state;
  }
  void import_optimizer_state(const std::vector<NamedArray>& a) override {
    if (!head_ || !head_->sharded()) return optimizer_->import_state(a);
    std::vector<NamedArray> own;  // a sharded head's rows step with the backbone's scalars
    for (const NamedArray& n : a)
      if (!n.name.starts_with("Head/")) own.push_back(n);
    optimizer_->import_state(own);
  }

  // The graph's variables, then a replicated head's weights (as the CPU runner's).
  std::vector<graph::NamedTensor> variables() override {
    std::vector<graph::NamedTensor> v = graph_.variables();
    if (head_ && !head_->sharded()) v.push_back(head_->variable());
    return v;
  }

  std::vector<NamedArray> host_variables() override {
    std::vector<NamedArray> out;
    for (const ParamState& p : params_) out.push_back({p.name, cuda::to_host(p.master).to_vector<float>()});
    for (const graph::NamedTensor& s : graph_.state()) out.push_back({s.name, cuda::to_host(s.value).to_vector<float>()});
    if (head_ && !head_->sharded()) {
      const graph::NamedTensor h = head_->variable();
      out.push_back({h.name, cuda::to_host(h.value).to_vector<float>()});
    }
    return out;
  }

  // Parameters go to the f32 master copy (then rounded into the graph's copy); state in its own dtype.
  void set_host_variables(const std::vector<NamedArray>& arrays) override {
    const std::vector<graph::NamedTensor> vars = variables();
    const std::vector<size_t> at = match_variables(vars, arrays);
    std::vector<graph::NamedTensor> state = graph_.state();
    for (size_t k = 0; k < arrays.size(); ++k) {
      const graph::NamedTensor& v = vars[at[k]];
      const Tensor host = Tensor::from<float>(v.value.shape(), std::span<const float>(arrays[k].data));
      if (at[k] < params_.size()) {
        upload(host, params_[at[k]].master);
      } else if (at[k] >= params_.size() + state.size()) {  // a replicated head's weights: f32, their own master
        Tensor dst = v.value;
        upload(host, dst);
      } else {
        Tensor dst = state[at[k] - params_.size()].value;
        upload(dst.dtype() == DType::kF32 ? host : host.to(dst.dtype()), dst);
      }
    }
    if (o_.target.dtype != DType::kF32) cast_masters_to_values(cuda::current_stream());
    cuda::synchronize();
  }

  // The device's last decision, read now (a wait: the loop asks at log steps and checkpoints only).
  StepRunnerStats stats() const override {
    StepRunnerStats st;
    const DeviceStepReadback rb = optimizer_->read_back();
    if (o_.target.dtype == DType::kF16) {
      st.loss_scale = rb.scaler.scale;
      st.clean_steps = rb.scaler.clean;
      st.skipped_steps = rb.scaler.skipped;
    }
    if (o_.max_gradient_norm > 0 || o_.target.dtype == DType::kF16) st.last_global_norm = rb.norm;
    st.graph_replays = graphs_.replays();
    return st;
  }
  void restore_loss_scale(double scale, int64_t clean_steps) override {
    if (o_.target.dtype != DType::kF16) return;
    scaler_.restore(scale, clean_steps);
    optimizer_->set_scaler_state(scaler_.state());  // the loss seed of every f16 step reads it there
  }

  void set_layer_observer(graph::LayerObserver* observer) override {
    external_ = observer;
    graph_.set_layer_observer(observer);
  }
  std::unique_ptr<StepTimeline> make_timeline() override { return make_cuda_timeline(); }

  void broadcast_variables() override {
    if (!o_.collectives) return;
    std::vector<DeviceCollectives::Buffer> buffers;
    for (const ParamState& p : params_) buffers.push_back(collective_buffer(p.master));
    for (const graph::NamedTensor& st : graph_.state()) buffers.push_back(collective_buffer(st.value));
    if (head_ && !head_->sharded()) buffers.push_back(collective_buffer(head_->variable().value));
    o_.collectives->broadcast(buffers, 0, cuda::current_stream());
    if (o_.target.dtype != DType::kF32) cast_masters_to_values(cuda::current_stream());
  }

  void average_state() override {
    if (!o_.collectives) return;
    std::vector<DeviceCollectives::Buffer> buffers;
    for (const graph::NamedTensor& st : graph_.state()) buffers.push_back(collective_buffer(st.value));
    if (!buffers.empty()) o_.collectives->average(buffers, cuda::current_stream());
  }

  bool collective_evaluation() const override { return head_ && head_->sharded(); }
  std::vector<checkpoint::RowShardSlice> sharded_rows() override {
    return head_ && head_->sharded() ? head_->row_slices() : std::vector<checkpoint::RowShardSlice>{};
  }
  std::vector<checkpoint::RowShardSlice> sharded_row_layout() override {  // nothing copied
    return head_ && head_->sharded() ? head_->row_layout() : std::vector<checkpoint::RowShardSlice>{};
  }
  void load_sharded_rows(checkpoint::RowShardReader& reader, bool optimizer) override {
    if (head_ && head_->sharded()) head_->load_rows(reader, optimizer);
  }

 private:
  Tensor to_compute(const Tensor& x32) {
    if (o_.target.dtype == DType::kF32) return x32;
    Tensor x = Tensor::empty(x32.shape(), o_.target.dtype, Device::kCuda, x32.layout());
    with_type(o_.target.dtype, [&](auto t) {
      using T = decltype(t);
      cuda_step::cast_from_f32<T>(x32.numel(), x32.data<float>(), static_cast<T*>(x.raw()), cuda::current_stream());
    });
    return x;
  }

  // ---- the classifier head (options.head; head_step_cuda.h) -------------------------------------------
  // A replicated head's weights join the device optimizer's parameters; a sharded head keeps its rows and
  // their optimizer state and runs its collectives over the runner's (NCCL) collectives.
  void make_head(std::vector<DeviceParam>& dparams) {
    head::HeadCollectives* hc = o_.collectives ? o_.collectives->head_collectives() : nullptr;
    if (o_.head->sharded && o_.collectives && o_.collectives->world_size() > 1 && !hc)
      throw ConfigError("a sharded classifier head on several GPUs needs NCCL collectives (nccl_collectives.h)");
    head_ = std::make_unique<HeadStepCuda>(*o_.head, hc, o_.optimizer);
    if (!head_->sharded()) dparams.push_back(head_->param(static_cast<float>(std::max(0.0, o_.weight_decay))));
  }

  // Forward, the head's loss and gradients (times the device loss scale), backward; then the one read of
  // the head's results, before the update (a bad label stops the step there). A replicated head's gradient
  // is complete before backward starts: its bucket goes first.
  StepResult head_train(const Tensor& x, const Tensor& y, uint64_t step) {
    graph_.forward(x, true, step);
    head_->queue_train(graph_, y, step,
                       optim::gpu::loss_scale_of(static_cast<const optim::gpu::StepControl*>(optimizer_->control())));
    if (buckets_) buckets_->launch_head();
    graph_.backward();
    return head_->read_results();
  }

  // queue_train(): the results of the last two queued steps in pinned memory, the event after each copy,
  // and the label checks queued up to that step; queued_ is the one not yet handed back.
  struct QueuedResults {
    Tensor host;
    cudaEvent_t done = nullptr;
    uint64_t label_checks = 0;
  };

  // A queued step's results once the device got past them; its own label checks raised.
  StepResult results_of(const QueuedResults& q) {
    CUDA_CHECK(cudaEventSynchronize(q.done));
    cuda::raise_label_errors_through(q.label_checks);
    return step_.results_from(q.host);
  }

  // Forward and backward (`run`, the train step's), with the f16 loss seed written first; data parallel:
  // this runner observes the backward to launch gradient buckets as they fill, forwarding every call to
  // the profiler's observer (external_) when there is one.
  template <typename Run>
  void forward_backward(Run&& run, const Tensor& labels) {
    if (o_.collectives) {
      buckets_->start_step();
      graph_.set_layer_observer(this);  // layer_end() launches the buckets during backward
    }
    try {
      seed_loss_gradient(labels);
      run();
    } catch (...) {
      graph_.set_layer_observer(external_);
      throw;
    }
    graph_.set_layer_observer(external_);
    phase("forward_backward");
  }

  // ---- CUDA graphs (options.cuda_graphs; step_graphs_cuda.h) ------------------------------------
  // Not with collectives (NCCL's bounded waits are host code) or a layer observer (ProfilerHook: its
  // profiled steps run eagerly). True when the step was launched from a captured graph.
  bool replay_captured(const Tensor& x, const Tensor& y, uint64_t step, float lr, int slot) {
    if (!o_.cuda_graphs || o_.collectives || external_) return false;
    optimizer_->check_learning_rate(lr);  // decide()'s host check, which a replay's decision skips
    return graphs_.replay(x, y, step, lr, slot, [&](const cuda_step::StepArgs* args) {
      graph_.set_device_step(&args->step);
      try {
        forward_backward([&] { step_.queue_train(x, y, step); }, y);
        update(0, &args->lr);
      } catch (...) {
        graph_.set_device_step(nullptr);
        throw;
      }
      graph_.set_device_step(nullptr);
    });
  }

  // Data parallel: the gradients' buckets (gradient_buckets_cuda.h), each parameter's owner the plan node
  // that has it.
  void plan_buckets() {
    const auto& nodes = graph_.plan().nodes();
    std::vector<size_t> owner;  // in parameters() order
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const auto& p : nodes[i].params)
        if (p.trainable) owner.push_back(i);
    std::vector<Tensor> grads;
    for (const ParamState& p : params_) grads.push_back(p.grad);
    const Tensor head_gradient = head_ && !head_->sharded() ? head_->gradient() : Tensor();
    buckets_ = std::make_unique<GradientBuckets>(*o_.collectives, grads, owner, nodes.size(), o_.allreduce_bucket_mb,
                                                 head_gradient.defined() ? &head_gradient : nullptr);
  }

  void layer_begin(size_t node, bool backward) override {
    if (external_) external_->layer_begin(node, backward);
  }
  void layer_end(size_t node, bool backward) override {
    if (external_) external_->layer_end(node, backward);
    if (!backward) return;
    buckets_->layer_done(node);
  }
  void phase(const char* name) {
    if (external_) external_->phase_end(name);
  }

  // The update in FastNN's order (update_order.h), three launches and no host read: the preparation
  // (unscale + weight decay into f32, the gradient statistics), the decision on the device (scaler skip,
  // clipping factor), the optimizer update with the f32 -> compute-dtype copy of the new weights.
  // lr_on_device: a step being captured into a CUDA graph reads its learning rate there at replay.
  void update(float lr, const float* lr_on_device = nullptr) {
    cudaStream_t s = cuda::current_stream();
    UpdateStages stages;
    if (o_.collectives) stages.average = [this, s] {  // the gradients are every rank's average from here
      buckets_->finish(s);
      phase("allreduce");
    };
    HeadStepCuda* rows = head_ && head_->sharded() ? head_.get() : nullptr;  // a sharded head's own update
    const bool stats = o_.max_gradient_norm > 0 || o_.target.dtype == DType::kF16;  // the optimizer's rule
    stages.decay = [this, s, rows, stats] {
      optimizer_->prepare(s);
      if (rows) rows->prepare(static_cast<float>(std::max(0.0, o_.weight_decay)), stats, optimizer_->control(), s);
    };
    stages.decide_on_device = [this, s, lr, lr_on_device] {
      if (lr_on_device) optimizer_->decide(lr_on_device, s);
      else optimizer_->decide(lr, s);
    };
    stages.apply = [this, s, rows](float) {
      optimizer_->apply(s);
      if (rows) rows->apply(optimizer_->control(), s);
    };
    apply_update(stages, {.max_gradient_norm = o_.max_gradient_norm});
  }

  // f16: the loss gradient the backward starts from is the device scaler's current scale (times the aux
  // weight), written on the stream, so a changed scale needs no host round trip.
  // (A classifier head writes the graph's output gradient itself, with the same scale.)
  void seed_loss_gradient(const Tensor& labels) {
    if (o_.target.dtype != DType::kF16 || head_) return;
    std::vector<std::pair<Tensor, double>> seeds = step_.loss_gradient_seeds(labels);
    for (auto& [dloss, weight] : seeds)
      optim::gpu::write_loss_scale<__half>(static_cast<const optim::gpu::StepControl*>(optimizer_->control()), weight,
                                            static_cast<__half*>(dloss.raw()), cuda::current_stream());
  }

  // f16/bf16 graphs: the graph's weights are the f32 master weights rounded (f32 ones are the masters).
  void cast_masters_to_values(cudaStream_t s) {
    for (ParamState& p : params_)
      if (p.value.dtype() != DType::kF32) with_type(o_.target.dtype, [&](auto t) {
        using T = decltype(t);
        cuda_step::cast_from_f32<T>(p.master.numel(), p.master.data<float>(), static_cast<T*>(p.value.raw()), s);
      });
  }

  StepRunnerOptions o_;
  graph::Graph graph_;
  TrainStep step_;
  LossScaler scaler_;
  std::vector<ParamState> params_;
  std::unique_ptr<HeadStepCuda> head_;     // the classifier head after the embedding; null: TrainStep's loss
  std::optional<StepResult> head_held_;    // queue_train() with a head: the last step's results
  std::unique_ptr<DeviceOptimizer> optimizer_;
  InputStages input_;  // host batches to the device (input_stages_cuda.h)
  QueuedResults queued_results_[2];
  int next_queued_ = 0;
  QueuedResults* queued_ = nullptr;
  StepGraphs graphs_;  // CUDA graphs of the queued step (options.cuda_graphs)
  graph::LayerObserver* external_ = nullptr;  // the profiler's, when set
  std::unique_ptr<GradientBuckets> buckets_;  // data parallel only
};

}  // namespace

std::unique_ptr<StepRunner> make_cuda_step_runner(const NetDef& net, const StepRunnerOptions& o) {
  FASTNN_CHECK(o.target.device == Device::kCuda, "make_cuda_step_runner for ", o.target.describe());
  return std::make_unique<CudaStepRunner>(net, o);
}

}  // namespace fastnn::runner
