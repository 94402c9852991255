// Graph: a NetPlan with its memory, run forward and backward over the DAG.
//
//   graph::Graph g(net, {.batch_size = 32, .seed = 7});
//   g.forward(images, /*training=*/true, step);      // images: [N, C, H, W], the plan's dtype, NCHW
//   ... write dLoss/dLogits into g.output_grad(0) (and g.output_grad(1) for aux logits) ...
//   g.backward();                                    // parameter gradients now in g.parameters()[i].grad
//   Optimizer opt(g.param_refs());                   // f32 CPU graphs
//
// Memory (allocated once by the constructor and by set_batch_size; kernels never allocate): each
// layer's output and saved tensors; for layers on a gradient path (they, or a layer before them, have
// trainable parameters) an output-gradient buffer, plus one scratch buffer per extra use of a tensor
// consumed several times; trainable parameters and their gradients; state; one workspace shared by
// every kernel (layers run one at a time). Parameters are owned by the graph; the Tensor handles it
// hands out share their storage, so a checkpoint or optimizer writes through them.
//
// Forward runs layers in topological order. Backward runs them in reverse, skipping layers with no
// gradient path; a tensor used by several consumers gets the sum of their gradients (the first
// writes the buffer, later ones write scratch that the `add` op sums in). Backward overwrites every
// parameter gradient (never accumulates across steps) and must follow a forward with the same mode.
//
// Modes: training = true uses batch statistics in batch norm (updating moving_mean/variance) and
// drops units in dropout; false uses the moving statistics and makes dropout the identity. Dropout
// masks are a pure function of (graph seed, layer name, step, micro-batch), so reruns are bitwise
// identical.
//
// Initialisation: every parameter and state tensor from its rule (net.proto InitSpec, else the op's
// default) with a seed derived from (seed, full name), so a parameter's initial value does not depend
// on the rest of the net. Values are drawn on the host (and uploaded with GraphOptions::upload on a
// device); f16/bf16 tensors are drawn in f32 and rounded, so every dtype starts from the f32 values.
//
// Names are TF-slim's ("<layer>/weights", "<layer>/BatchNorm/moving_mean" for the zoo's layers).
// Threading: one thread drives a graph; kernels parallelise inside with oneTBB.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "schemas/net.pb.h"
#include "trainer/graph/net_plan.h"
#include "trainer/params.h"

namespace fastnn::graph {

struct GraphOptions {
  int64_t batch_size = 1;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;
  uint64_t seed = 0;  // initialisation and dropout
  const ops::OpRegistry* registry = nullptr;  // null: builtin_op_registry()
  // Non-CPU graphs: copies a host tensor into a device tensor of the same shape and dtype (the backend
  // provides it). Initialisation draws on the host and uploads; without it such a graph cannot be
  // initialised (Error).
  void (*upload)(const Tensor& host, Tensor& device) = nullptr;
  bool fuse = false;  // PlanOptions::fuse: relu fused into the batch_norm / add before it
  Layout layout = Layout::kNCHW;  // PlanOptions::layout: kNHWC takes [N, H, W, C] images
  bool fuse_conv_bn = false;      // PlanOptions::fuse_conv_bn: a convolution joins the batch norm after it
  bool fold_batch_norms = false;  // PlanOptions::fold_batch_norms (inference graphs only)
  bool fold_in_bf16 = false;      // PlanOptions::fold_in_bf16
  int64_t fold_job_images = 0;    // PlanOptions::fold_job_images
  // Forward only, in evaluation mode (predict, serve): no gradient buffers; a layer's output buffer is
  // taken over by a later layer once every layer reading it has run (the logits, the aux logits and the
  // `keep` layers excepted), and every layer's saved tensors share one set of buffers (only backward
  // reads them). set_batch_size keeps the buffers and only grows them, so a server alternating batch
  // sizes allocates nothing after its largest batch. forward(training = true), backward(),
  // output_grad() and param_refs() are Errors; parameters() have no `grad`. Kernels may keep copies
  // derived from parameters (ops::ForwardArgs::params_write_counted): write them through the tensors of
  // variables() / parameters() / state(), never through a pointer kept across a forward.
  bool inference = false;
  // False: the variables (trainable parameters and state) start as zeros instead of drawn from their
  // init rules, for a graph that loads every one of them next (predict, serve: a checkpoint must hold
  // them all); ResNet-50's draws took 16% of a 32-image predict. Fixed constants keep their rules.
  bool draw_variables = true;
  std::vector<std::string> keep;  // inference: layers whose output layer_output() reads after forward
};

// A graph-owned tensor by name. `grad` is defined for trainable parameters.
// Per-layer timing hooks (ProfilerHook, trainer/loop/profiler.h): when set on a graph, called on the
// driving thread right before and after each layer's kernel call (node = plan index; backward calls
// include summing a multiply-used tensor's gradients). Adds two virtual calls per layer when set.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  virtual void layer_begin(size_t node, bool backward) = 0;
  virtual void layer_end(size_t node, bool backward) = 0;
  // A phase of the step outside the layers has ended (a step runner's "allreduce", "optimizer"), so
  // a profile shows where the rest of the step goes. Called by step runners, not by the graph.
  virtual void phase_end(const char* phase) {}
};

struct NamedTensor {
  std::string name;
  Tensor value;
  Tensor grad;
  bool weight_decay = false;
};

class Graph {
 public:
  Graph(const NetDef& net, const GraphOptions& options);
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();

  const NetPlan& plan() const { return plan_; }
  int64_t batch_size() const { return plan_.batch_size(); }
  const Shape& input_shape() const { return plan_.input_shape(); }
  DType dtype() const { return options_.dtype; }
  Layout layout() const { return options_.layout; }  // of the 4-D activations, input_shape() included
  int64_t num_classes() const { return plan_.num_classes(); }
  bool has_aux_logits() const { return plan_.aux_logits_node() >= 0; }
  double aux_loss_weight() const { return plan_.aux_loss_weight(); }

  // Outputs: 0 = logits [N, classes], 1 = aux logits when the net has them.
  size_t num_outputs() const { return has_aux_logits() ? 2 : 1; }
  const Tensor& output(size_t k) const;
  // dLoss/d output k, written by the caller before backward() (every output, zeros if unused).
  Tensor& output_grad(size_t k);
  // Any layer's output after forward (tests, feature extraction); Error for an unknown name, and in an
  // inference graph for a layer not in GraphOptions::keep (its buffer has been reused).
  const Tensor& layer_output(const std::string& layer_name) const;

  // images must be input_shape() with the graph's dtype and device; Error otherwise. The graph keeps
  // a reference to them until the next forward (backward reads them). micro_batch: which of a step's
  // accumulated batches this is (gradient accumulation); each draws its own dropout / drop-path masks,
  // while the step alone sets drop-path's ramp. 0 draws what a step without accumulation draws.
  void forward(const Tensor& images, bool training, uint64_t step = 0, uint64_t micro_batch = 0);
  // The images of the last forward (undefined before the first).
  const Tensor& input() const { return input_; }
  void backward();

  // Re-initialises every parameter and state tensor (the constructor calls this with options.seed).
  void initialize(uint64_t seed);
  // Re-plans for another batch size (the last, smaller evaluation batch), keeping parameters and state.
  // A CPU inference graph keeps the plans it made (up to kKeptPlans, the least recently used leaving
  // first) and takes one back when its batch size returns: a server's batches change size at nearly
  // every batch, and re-planning ResNet-50 cost 5 ms plus the first forward's oneDNN primitives. 32:
  // serve's default --max_batch; 16 served ResNet-50 to 32 clients at 46 req/s, 32 at 61.
  void set_batch_size(int64_t batch_size);
  static constexpr size_t kKeptPlans = 32;

  // Trainable parameters with gradients, in plan order.
  std::vector<NamedTensor> parameters() const;
  // Moving statistics (no gradients).
  std::vector<NamedTensor> state() const;
  // Parameters then state: what a checkpoint saves and a fine-tune loads.
  std::vector<NamedTensor> variables() const;
  // The optimizer's view (trainer/optim): f32 CPU graphs only, Error otherwise. Pointers stay valid
  // for the graph's lifetime (set_batch_size keeps parameters in place).
  std::vector<ParamRef> param_refs() const;

  // Bytes of activation memory (outputs, saved, gradient buffers, workspace) and of parameters,
  // gradients and state.
  size_t activation_bytes() const;
  size_t workspace_bytes() const { return workspace_.defined() ? workspace_.nbytes() : 0; }  // part of the above
  size_t parameter_bytes() const;
  // Inference graphs: how many layers write their output over an input's buffer
  // (ops::OpSignature::output_may_take_input), the residual of ResNet's fused convolutions.
  size_t layers_writing_over_an_input() const { return layers_over_input_; }

  // Null (the default) turns it off; the observer must outlive its use.
  void set_layer_observer(LayerObserver* observer) { observer_ = observer; }
  // Synchronised batch norm: training steps take batch statistics over every replica (ops/batch_norm.h).
  // Null (the default): this process's batch only. Must outlive its use.
  void set_cross_replica_sum(ops::CrossReplicaSum* replicas) { replicas_ = replicas; }
  // A CUDA step runner capturing the step into a CUDA graph: forward's step is read by the kernels from
  // this device address (ops::ForwardArgs::device_step) while set; nullptr: the `step` argument.
  void set_device_step(const uint64_t* device_step) { device_step_ = device_step; }

 private:
  struct NodeMemory;
  void allocate_activations();
  void share_inference_buffers();
  // The producer of the input whose buffer node i's output takes (OpSignature::output_may_take_input),
  // or -1.
  int taken_input(size_t i, std::span<const int64_t> last_reader) const;
  // Node i's output type, as its kernel declares it: the graph's dtype but between bf16 folds of an
  // inference plan (PlanOptions::fold_in_bf16).
  DType output_dtype(size_t i) const { return plan_.nodes()[i].kernel->signature().outputs[0].dtype; }
  void check_images(const Tensor& images) const;

  GraphOptions options_;
  NetPlan plan_;
  NetDef net_;  // kept for set_batch_size
  std::vector<NetPlan> kept_plans_;  // set_batch_size: other batch sizes' plans, most recently used last
  std::vector<NodeMemory> mem_;  // per plan node
  Tensor workspace_;
  // Inference graphs: the shared output buffers, the saved-tensor buffers (k-th saved tensor of every
  // layer), each layer's output buffer, and which outputs stay readable after forward.
  std::vector<std::shared_ptr<Storage>> pool_, saved_pool_;
  std::vector<bool> readable_;
  size_t layers_over_input_ = 0;
  bool forward_done_ = false, last_training_ = false;
  LayerObserver* observer_ = nullptr;
  Tensor input_;
  ops::CrossReplicaSum* replicas_ = nullptr;
  const uint64_t* device_step_ = nullptr;
};

}  // namespace fastnn::graph
