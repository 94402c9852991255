// A whole training step on one device: forward, loss, backward, the gradient average over ranks, weight
// decay, global-norm clipping and the optimizer update, behind one interface: `fastnn train`, `fastnn
// eval` and `fastnn bench train` drive every device through it (the device is chosen here, at the
// bottom, never in the loop).
//
//   auto r = make_step_runner(net, {.target = resolve_compute_target(cfg), .batch_size = 64, ...});
//   StepResult s = r->train(images, labels, step, lr);   // host or device batch
//
// The update order is FastNN's, for every device (update_order.h): average over ranks, (unscale and)
// weight decay, global norm, loss-scale skip decision, clipping, optimizer step.
//
// CPU runner: the f32 CPU graph, TrainStep, the CPU optimizer (trainer/optim) and gradient_ops. With
// options.host_comm (a world of several ranks) it owns the gradient average: BucketedAllreduce over the
// parameters' gradients between backward and the update, and broadcasts / averages variables over the
// same communicator.
//
// CUDA runner (step_runner_cuda.cpp, only in CUDA builds):
//   - parameters are initialised on the host with the graph's seeds and uploaded, so a CUDA run starts
//     from the CPU run's weights (f16/bf16 graphs: the f32 master copy holds the CPU values exactly,
//     the graph holds them rounded);
//   - kernels from the op registry (each op registers its CPU and CUDA kernels);
//   - the optimizer keeps f32 master weights and slots on the device (optim/device_optimizer.h) with
//     the CPU optimizer's state names, so checkpoints interchange;
//   - the update is three launches for every parameter together (chunk tables, optim/tensor_chunks.h):
//     unscale + weight decay into f32 with the gradient statistics, the decision on the device (the loss
//     scaler's skip under dynamic scaling, the clipping factor: update_rules.h's rule::decide, state in
//     device memory), the optimizer update with the compute-dtype copy of the new weights; nothing is
//     read back for it (stats() reads the device's numbers when the loop logs or saves); f16: the loss
//     gradient the backward starts from is written from the device's scale each step;
//   - host batches (input_format.h): by default uint8 NHWC in the pipeline's pinned buffers, copied
//     from there on a copy stream (other host memory goes through two pinned staging buffers first),
//     the compute stream waits on that batch's event only; on the device uint8 is normalised with the
//     preset's mean and 1/std, transposed to NCHW and cast to the compute dtype in one kernel (f16/f32
//     batches are only transposed / cast). The stage keeps the host batch alive until its copy is done;
//   - a classifier head (options.head) runs on the device in f32 (head_step_cuda.h), its results read
//     inside each step (queue_train hands them back one call late, as the CPU does).
//
// Threading: one thread drives a runner. Errors: ConfigError for options the device path does not
// support (capabilities.h asks first), Error from the graph and kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "schemas/net.pb.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/graph/graph.h"
#include "trainer/head/classifier_head.h"
#include "trainer/runner/device_setup.h"
#include "trainer/runner/input_format.h"
#include "trainer/runner/step_timeline.h"
#include "trainer/optim/loss_scaler.h"
#include "trainer/optim/optimizers.h"
#include "trainer/train_step.h"

namespace fastnn {
class Communicator;
}
namespace fastnn::head {
class HeadCollectives;
}

namespace fastnn::runner {

// Collectives over a runner's device buffers, for data-parallel training on GPUs (the NCCL path,
// nccl_collectives.h). Every rank's runner calls them in the same order with the same counts; buffers
// are device memory of an f32/f16/bf16 dtype, updated in place; `stream` (a cudaStream_t) orders the
// collective. average() and broadcast() return only once the collective has finished, or abort the
// job after the collective timeout (a dead rank must not hang the others); average_async() only
// issues it, and wait(stream) is that bounded wait for everything issued on the stream.
class DeviceCollectives {
 public:
  struct Buffer {
    void* data;
    size_t count;  // elements
    DType dtype;
  };
  virtual ~DeviceCollectives() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Every rank gets bitwise the same result.
  void average(std::span<const Buffer> buffers, void* stream) {
    average_async(buffers, stream);
    wait(stream);
  }
  virtual void average_async(std::span<const Buffer> buffers, void* stream) = 0;
  virtual void wait(void* stream) = 0;
  virtual void broadcast(std::span<const Buffer> buffers, int root, void* stream) = 0;
  // The same world's collectives for a sharded classifier head (head/head_collectives.h); null when
  // these collectives have none.
  virtual head::HeadCollectives* head_collectives() { return nullptr; }
};

struct StepRunnerOptions {
  ComputeTarget target;
  int64_t batch_size = 1;
  uint64_t seed = 0;
  double label_smoothing = 0;
  // class_weights (loop/class_weights.h): one per class; empty: unweighted. The training runner's only
  // (step_runner_options leaves it empty: the held-out loss of `fastnn eval` is the plain one).
  std::vector<double> class_weights;
  double weight_decay = 0;
  double max_gradient_norm = 0;  // 0: no clipping
  OptimizerOptions optimizer;
  LossScalerOptions scaling;     // used by f16 CUDA runners only
  // CUDA: softmax_xent / top_k wait for the device to report a bad label (cuda::Policy::check_labels).
  // Off for labels valid by construction (synthetic benchmarks): a bad label still gives a NaN loss.
  bool check_labels = true;
  // CUDA: deterministic cuDNN algorithms only (cuda::Policy::deterministic; the `deterministic` config
  // field), so two runs of the same steps give bitwise the same weights. The CPU runner always is.
  bool deterministic = false;
  // CUDA: time every cuDNN convolution algorithm once per shape (cuda::Policy::conv_search; the
  // conv_search config field) instead of taking cuDNN's heuristic ranking.
  bool exhaustive_conv_search = false;
  // CUDA, NHWC, f16/bf16: convolutions over a channel count that is not a multiple of 8 run on zero-padded
  // channels (cuda::Policy::pad_conv_channels; the conv_pad_channels config field).
  bool pad_conv_channels = false;
  // CUDA: depthwise convolutions as cuDNN's grouped convolution (cuda::Policy::depthwise_cudnn; the
  // depthwise_conv config field).
  bool depthwise_cudnn = false;
  // CUDA: convolutions through cuDNN's graph API (cuda::Policy::conv_graph_api; the conv_api config field).
  bool conv_graph_api = false;
  // The graph's plan rewrite (GraphOptions::fuse; the fuse_ops config field).
  bool fuse = false;
  // CPU, fuse_ops not set: make_step_runner sets `fuse` where the runner's layout is NHWC on the fast
  // kernels, whose batch_norm+relu, +relu6 and +add+relu are one-pass (ops/batch_norm_nhwc.cpp).
  bool fuse_by_layout = false;
  // A convolution joins the batch norm after it (GraphOptions::fuse_conv_bn; the fuse_conv_bn config field).
  bool fuse_conv_bn = false;
  // The graph's activation layout (GraphOptions::layout; the data_format config field): kNHWC makes
  // every 4-D activation [N, H, W, C], the batches included (batch_format() asks the pipeline for them).
  Layout layout = Layout::kNCHW;
  // CPU, data_format=auto: make_step_runner replaces `layout` with auto_cpu_layout's choice for the net
  // (trainer/runner/cpu_layout.h).
  bool auto_cpu_layout = false;
  // CUDA: queue_train() replays the step (forward, backward, update) from CUDA graphs captured after two
  // eager steps (the cuda_graph config field): trainer/runner/step_graphs_cuda.h.
  bool cuda_graphs = false;
  // CUDA: gradients are averaged over the ranks while backward runs: in buckets of at most
  // allreduce_bucket_mb (parameters in backward order, the compute dtype, still loss-scaled), each
  // issued on a communication stream as soon as the backward pass has written all its gradients; the
  // update (unscaling, weight decay, overflow check, clipping: linear or the same on every rank) waits
  // for the last, so every rank applies the same update. Not owned; must outlive the runner. nullptr:
  // one process.
  DeviceCollectives* collectives = nullptr;
  // CPU: the communicator of a data-parallel world (trainer/comm); gradients are averaged over it in
  // buckets of allreduce_bucket_mb between backward and the update. Not owned. nullptr or a world of
  // one: one process.
  Communicator* host_comm = nullptr;
  double allreduce_bucket_mb = 25;
  // The batches the runner asks the pipeline for (input_dtype: auto, uint8, float16, float32) and the
  // preset's normalisation it applies to uint8 ones (input_format.h).
  std::string input_dtype = "auto";
  InputNormalization input;
  // The classifier head after the net's embedding output (trainer/head, head_config.h: loss_type,
  // emb_dim); absent: the net's own softmax cross-entropy (TrainStep). A sharded head (dist_*) splits its
  // class rows over host_comm's ranks on the CPU, over the collectives' ranks on the GPU (head_step_cuda.h).
  std::optional<head::HeadOptions> head;
  // Forward only (predict, serve): the graph is an inference graph (graph.h, GraphOptions::inference:
  // no gradient buffers, layers share output buffers, batch-size changes allocate nothing once the
  // largest batch has run) whose `keep_layers` stay readable; no optimizer; train() is an Error. CPU
  // runner; the CUDA runner builds its usual graph.
  bool inference = false;
  std::vector<std::string> keep_layers;
  // GraphOptions::draw_variables: false where every variable is loaded right after (CPU runner).
  bool draw_variables = true;
  // precision=bf16 on the CPU. Training and evaluation graphs: conv2d and fully_connected multiply in
  // bfloat16 and accumulate in f32, everything else stays f32 (graph::cpu_bf16_op_registry());
  // make_step_runner refuses it (ConfigError) without bf16 instructions, in NCHW, or for a net with no
  // convolution.
  // Inference graphs (predict, serve): the convolutions folded with a batch norm compute in bfloat16
  // (GraphOptions::fold_in_bf16); the caller checks ops::cpu_bf16_available().
  bool cpu_bf16 = false;
  // Inference graphs: the images they are to run in their life, 0 when unbounded (GraphOptions::fold_job_images).
  int64_t job_images = 0;
  // TF-slim's trainable_scopes: only parameters under one of these name prefixes are updated (weight
  // decay, the global norm and the optimizer see only them; gradients are still averaged whole; the
  // others keep their values bitwise, while batch-norm moving statistics update everywhere, as TF-slim's
  // update ops do). Empty: every parameter. Each scope must match a parameter (ConfigError with the
  // closest scopes). Both runners: the CUDA one gives its device optimizer only these parameters.
  std::vector<std::string> trainable_scopes;
  // Gradient accumulation (the gradient_accumulation_steps config field), CPU runner: train() takes
  // accumulation_steps x batch_size images and labels, runs forward and backward on each batch_size of
  // them in turn (each with its own batch-norm statistics and dropout masks, as PyTorch's loop does)
  // and updates once from the mean of their gradients; its StepResult is theirs summed (loss: the
  // mean). make_step_runner refuses more than 1 on other devices (ConfigError).
  int accumulation_steps = 1;
};

// The indices of `names` under `scopes` (all of them when `scopes` is empty); ConfigError naming a
// scope that matches none, with the model's closest scopes.
std::vector<size_t> trainable_indices(const std::vector<std::string>& names, const std::vector<std::string>& scopes);
// The parameters of `all` under `scopes`, by trainable_indices.
std::vector<ParamRef> select_trainable(const std::vector<ParamRef>& all, const std::vector<std::string>& scopes);

struct StepRunnerStats {
  double loss_scale = 1;
  int64_t clean_steps = 0;       // applied steps since the scale last changed (dynamic scaling)
  int64_t skipped_steps = 0;     // overflowed f16 steps not applied
  double last_global_norm = 0;   // before clipping; 0 when not computed
  int64_t graph_replays = 0;     // CUDA: steps launched from a captured CUDA graph (options.cuda_graphs)
};

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual const ComputeTarget& target() const = 0;
  virtual graph::Graph& graph() = 0;
  // The batches train()/evaluate() read fastest (dtype, layout, allocator): what the pipeline makes.
  virtual BatchFormat batch_format() const { return {}; }

  // images: a host batch in batch_format() (the CPU: [N, C, H, W] f32), or [N, C, H, W] in the compute
  // dtype on the device; labels [N] i32/i64, host or device.
  virtual StepResult train(const Tensor& images, const Tensor& labels, uint64_t step, float lr) = 0;
  // train() with its results read one step late, so the host never waits inside a step: queues the
  // step and returns the results of the step queued before it (none for the first, or after drain()).
  // drain() waits for the last queued step and returns its results. A GPU runner queues the update too
  // and copies the results block asynchronously; the next queue_train() reads it once the device got
  // there, while the new step already runs. A bad label or a non-finite loss is thus reported one step
  // late: the caller stops before saving anything (the loop checks each result as it arrives and drains
  // before every log line, checkpoint, evaluation and the end). Call drain() before train()/evaluate().
  // The base class (CPU) runs train() at once and hands its results back on the next call: the same
  // order of results on every device.
  virtual std::optional<StepResult> queue_train(const Tensor& images, const Tensor& labels, uint64_t step, float lr);
  virtual std::optional<StepResult> drain();
  // The batch the next train() will get, handed over before the current step runs (the loop's one batch
  // of lookahead): a GPU runner starts its copy to the device now, on its copy stream, so it overlaps
  // the step in between; train() with these same tensors then only waits for that copy. Other calls in
  // between (evaluate) leave it alone. No-op on the CPU.
  virtual void prefetch(const Tensor& images, const Tensor& labels) {}
  // Mixup / CutMix (pipeline::Batch::mix_weights): the labels of the next train() / queue_train() steps
  // mix as TrainStep::set_label_mix says, one weight per sample of the step's batch (all its accumulated
  // parts; each part's samples are paired within it); none: unmixed. Only the CPU runner without a
  // classifier head mixes them; the others refuse any weight but 1 (ConfigError), as the trainer does at
  // start-up.
  virtual void set_label_mix(const std::vector<double>& own_weights);
  virtual StepResult evaluate(const Tensor& images, const Tensor& labels) = 0;
  // The logits [N, classes] of the batch evaluate() just ran, on the host (a device graph's are
  // copied): what the confusion matrix is counted from (loop/evaluate.h). Undefined when the output
  // is not per-class logits (a classifier head's embedding).
  virtual Tensor host_logits() { return Tensor(); }
  // A random batch placed where train() reads it fastest (synthetic-data benchmarks).
  virtual std::pair<Tensor, Tensor> synthetic_batch(uint64_t seed) = 0;
  // Waits for the device (no-op on the CPU).
  virtual void synchronize() {}
  // Milliseconds `fn` takes on the device's compute stream (CUDA events), or wall time on the CPU.
  virtual double time_ms(const std::function<void()>& fn);

  // Optimizer state under the CPU optimizer's names; f32 host copies.
  virtual std::vector<NamedArray> export_optimizer_state() const = 0;
  virtual void import_optimizer_state(const std::vector<NamedArray>& arrays) = 0;
  // What a checkpoint holds: the graph's variables, plus a replicated classifier head's weights.
  virtual std::vector<graph::NamedTensor> variables() { return graph().variables(); }
  // Parameters (the f32 master values) then state, f32 host copies by name, in variables() order.
  virtual std::vector<NamedArray> host_variables() = 0;
  // Writes f32 host values into the variables of the same names (parameters: the master copy, and the
  // compute-dtype copy rounded from it; batch-norm statistics). Any subset, in any order; a name the
  // model lacks or a wrong element count: FormatError.
  virtual void set_host_variables(const std::vector<NamedArray>& arrays) = 0;
  virtual StepRunnerStats stats() const { return {}; }
  // The loss scaler's checkpoint state (f16 runners; others ignore it).
  virtual void restore_loss_scale(double scale, int64_t clean_steps) {}

  // ProfilerHook: `observer` sees every layer of the next train()/evaluate() calls and the runner's
  // phases outside the layers ("allreduce", "optimizer"); nullptr turns it off.
  virtual void set_layer_observer(graph::LayerObserver* observer) = 0;
  // A timeline in the device's order of work (step_timeline.h).
  virtual std::unique_ptr<StepTimeline> make_timeline() { return std::make_unique<HostTimeline>(); }

  // Data parallel (options.collectives): rank 0's parameters and batch-norm moving statistics to every
  // rank (at the start), and the moving statistics averaged (before evaluation and checkpoints: each
  // rank's drifted with its own batches). No-ops without collectives.
  virtual void broadcast_variables() {}
  virtual void average_state() {}
  // True when evaluate() is a collective (a sharded head): every rank must evaluate the same batches.
  virtual bool collective_evaluation() const { return false; }
  // A sharded head's rows on this rank (weights, optimizer slots): what the rank writes into its
  // checkpoint shard file (trainer/checkpoint/row_shards.h); empty without one. Its optimizer
  // scalars travel in export_optimizer_state().
  virtual std::vector<checkpoint::RowShardSlice> sharded_rows() { return {}; }
  // The same slices without their data (data null; names, global shapes, row ranges and counts kept):
  // what a loader asks (load_head_rows, fine-tuning, eval) without the copy sharded_rows() makes on
  // the GPU (a device-to-host copy of every row and slot: gigabytes at 1.25 M rows). The default strips
  // sharded_rows(), which costs nothing on the CPU (views of the rows).
  virtual std::vector<checkpoint::RowShardSlice> sharded_row_layout();
  bool has_sharded_rows() { return !sharded_row_layout().empty(); }
  // This rank's rows from a checkpoint of any world size (slots too with `optimizer`).
  virtual void load_sharded_rows(checkpoint::RowShardReader& reader, bool optimizer) {}

 private:
  std::optional<StepResult> held_;  // the base class's queue_train(): the last step's results
};

// The job config's runner options for `target`: batch_size, seed, label_smoothing, deterministic,
// allreduce_bucket_mb, weight_decay, max_gradient_norm, the optimizer and loss scaling (collectives and
// check_labels are the caller's).
StepRunnerOptions step_runner_options(const JobConfig& config, const ComputeTarget& target);
// The options for a runner that only runs forward passes (eval, predict, serve): `o` with fuse_conv_bn
// off and no gradient accumulation. Only a training forward uses the convolution's channel sums and the plain plan computes the same,
// so such a runner need not build cuDNN's conv + statistics plans (a trial run each) at start-up.
StepRunnerOptions forward_only(StepRunnerOptions o);
// data_format and fuse_ops as a run on `device` takes them. data_format auto and fuse_ops not set follow
// the device: NHWC and fused on cuda, where both measured faster (docs/PERFORMANCE.md, "GPU training");
// on the CPU NCHW and unfused here, which make_step_runner turns into NHWC for a net the fast CPU kernels
// cover (StepRunnerOptions::auto_cpu_layout, trainer/runner/cpu_layout.h), fused there (fuse_by_layout;
// the NCHW reference's fusions are composites that save more and gain nothing).
Layout layout_for(const JobConfig& config, Device device);
bool fuse_ops_for(const JobConfig& config, Device device);

// `options` with the CPU's choices for `net` made, as make_step_runner makes them: data_format auto's
// layout (auto_cpu_layout) and fuse_by_layout's fusion. Other devices' options are returned as given.
// The memory estimate plans the graph a runner will build from these (trainer/loop/memory_estimate.h).
StepRunnerOptions with_cpu_choices(const NetDef& net, const StepRunnerOptions& options);
std::unique_ptr<StepRunner> make_step_runner(const NetDef& net, const StepRunnerOptions& options);
// The CUDA runner (defined in CUDA builds only; make_step_runner throws ConfigError otherwise).
std::unique_ptr<StepRunner> make_cuda_step_runner(const NetDef& net, const StepRunnerOptions& options);

// A random batch on the host: images uniform in [-1, 1), labels uniform in [0, classes).
std::pair<Tensor, Tensor> random_host_batch(const graph::Graph& g, uint64_t seed);

// set_host_variables' check: every array names a variable of `variables` with the same element count;
// returns, per array, the index of its variable.
std::vector<size_t> match_variables(const std::vector<graph::NamedTensor>& variables,
                                    const std::vector<NamedArray>& arrays);

}  // namespace fastnn::runner
