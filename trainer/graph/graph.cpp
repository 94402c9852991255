#include "trainer/graph/graph.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "trainer/ops/init.h"

namespace fastnn::graph {

namespace {

PlanOptions plan_options(const GraphOptions& o, int64_t batch_size) {
  // A folded node has no backward and computes the evaluation-mode batch norm only.
  FASTNN_CHECK(!o.fold_batch_norms || o.inference, "GraphOptions::fold_batch_norms is for inference graphs only");
  return PlanOptions{.batch_size = batch_size, .dtype = o.dtype, .device = o.device, .registry = o.registry, .fuse = o.fuse,
                     .layout = o.layout, .fuse_conv_bn = o.fuse_conv_bn, .fold_batch_norms = o.fold_batch_norms,
                     .fold_in_bf16 = o.fold_in_bf16, .fold_job_images = o.fold_job_images, .keep = o.keep};
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Seeds keyed by name, so adding a layer does not change the others' initial values or masks.
uint64_t param_seed(uint64_t seed, const std::string& name) { return splitmix(seed ^ fnv1a(name)); }
uint64_t dropout_seed(uint64_t seed, const std::string& layer) {
  return splitmix(splitmix(seed) ^ fnv1a(layer) ^ 0x64726f706f7574ull);
}

size_t bytes_of(const std::vector<Tensor>& v) {
  size_t n = 0;
  for (const Tensor& t : v)
    if (t.defined()) n += t.nbytes();
  return n;
}

// How backward() hands out the gradient buffer of a node's input slot s, in its reverse walk over the
// nodes: nothing (a data input or a producer without gradient); the producer's own buffer for its first
// writer; the producer's own buffer to a kernel that adds into it (accumulates_input_grads, cuDNN's
// beta = 1) when the producer feeds it once; otherwise a scratch buffer summed in afterwards. `written`
// holds, per node, whether its gradient buffer has been written yet (outputs start written: the loss's).
enum class GradSlot { kNone, kFirstWrite, kAddsInto, kScratch };

template <typename NeedsGrad>
GradSlot grad_slot(const PlanNode& node, size_t s, NeedsGrad needs_grad, std::vector<bool>& written) {
  const int p = node.inputs[s];
  if (p == kDataInput || !needs_grad(p)) return GradSlot::kNone;
  if (!written[static_cast<size_t>(p)]) {
    written[static_cast<size_t>(p)] = true;
    return GradSlot::kFirstWrite;
  }
  if (node.kernel->signature().accumulates_input_grads && s < 64 &&
      std::count(node.inputs.begin(), node.inputs.end(), p) == 1)
    return GradSlot::kAddsInto;
  return GradSlot::kScratch;
}

}  // namespace

struct Graph::NodeMemory {
  std::vector<Tensor> params, param_grads, state;  // param_grads[i] undefined for fixed params
  std::vector<Tensor> inputs, outputs, saved;
  std::vector<Tensor> d_outputs;  // {d_out}, or empty when the layer has no gradient buffer
  std::vector<Tensor> d_inputs;   // filled per backward call
  std::vector<Tensor> scratch;    // extra gradient buffers for a tensor with several uses (grad_slot)
  std::unique_ptr<ops::OpKernel> accumulate;  // add(d_out, scratch) -> d_out
  bool needs_grad = false;  // this layer or one before it has trainable parameters
  bool is_output = false;
  uint64_t dropout_seed = 0;
};

Graph::Graph(const NetDef& net, const GraphOptions& options)
    : options_(options),
      plan_(NetPlan::make(net, plan_options(options, options.batch_size))),
      net_(net) {
  mem_.resize(plan_.nodes().size());
  for (size_t i = 0; i < mem_.size(); ++i) {
    const PlanNode& node = plan_.nodes()[i];
    NodeMemory& m = mem_[i];
    for (const PlannedTensor& p : node.params) {
      m.params.push_back(Tensor::empty(p.spec.shape, p.spec.dtype, options.device));
      m.param_grads.push_back(p.trainable && !options.inference ? Tensor::empty(p.spec.shape, p.spec.dtype, options.device)
                                                                : Tensor());
    }
    for (const PlannedTensor& s : node.state) m.state.push_back(Tensor::empty(s.spec.shape, s.spec.dtype, options.device));
    m.dropout_seed = dropout_seed(options.seed, node.name);
  }
  allocate_activations();
  initialize(options.seed);
}

Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

void Graph::allocate_activations() {
  const auto& nodes = plan_.nodes();
  const Device dev = options_.device;
  size_t workspace = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeMemory& m = mem_[i];
    const PlanNode& node = nodes[i];
    m.needs_grad = node.trainable_params() > 0;
    for (int p : node.inputs)
      if (p != kDataInput && mem_[static_cast<size_t>(p)].needs_grad) m.needs_grad = true;
    m.is_output = static_cast<int>(i) == plan_.logits_node() || static_cast<int>(i) == plan_.aux_logits_node();
  }
  // The scratch buffers each layer's gradient needs: the most that one consumer takes in backward()'s
  // walk (grad_slot), so a fan-out whose other consumers all add into the buffer needs none.
  std::vector<size_t> scratch_needed(nodes.size(), 0);
  {
    const auto needs_grad = [&](int p) { return mem_[static_cast<size_t>(p)].needs_grad; };
    std::vector<bool> written(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) written[i] = mem_[i].is_output;
    for (size_t i = nodes.size(); i-- > 0;) {
      if (!mem_[i].needs_grad) continue;
      std::map<int, size_t> taken;
      for (size_t s = 0; s < nodes[i].inputs.size(); ++s)
        if (grad_slot(nodes[i], s, needs_grad, written) == GradSlot::kScratch) {
          const int p = nodes[i].inputs[s];
          scratch_needed[static_cast<size_t>(p)] = std::max(scratch_needed[static_cast<size_t>(p)], ++taken[p]);
        }
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeMemory& m = mem_[i];
    const PlanNode& node = nodes[i];
    const ops::OpSignature& sig = node.kernel->signature();
    m.inputs.assign(node.inputs.size(), Tensor());
    m.d_outputs.clear();
    m.scratch.clear();
    m.accumulate.reset();
    workspace = std::max(workspace, sig.workspace_bytes);
    if (options_.inference) continue;  // outputs and saved tensors: share_inference_buffers()
    m.outputs = {Tensor::empty(node.output_shape, options_.dtype, dev)};
    m.saved.clear();
    for (const ops::TensorSpec& s : sig.saved) m.saved.push_back(Tensor::empty(s.shape, s.dtype, dev));
    if (m.needs_grad || m.is_output) m.d_outputs = {Tensor::empty(node.output_shape, options_.dtype, dev)};
    if (m.needs_grad && scratch_needed[i] > 0) {
      for (size_t k = 0; k < scratch_needed[i]; ++k) m.scratch.push_back(Tensor::empty(node.output_shape, options_.dtype, dev));
      const ops::TensorSpec spec{.name = "grad", .shape = node.output_shape, .dtype = options_.dtype};
      const std::vector<ops::TensorSpec> two{spec, spec};
      m.accumulate = plan_.options().registry->create("add", dev, {}, two);
    }
  }
  if (options_.inference) share_inference_buffers();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t s = 0; s < nodes[i].inputs.size(); ++s)
      if (const int p = nodes[i].inputs[s]; p != kDataInput) mem_[i].inputs[s] = mem_[static_cast<size_t>(p)].outputs[0];
  const bool keep_workspace = options_.inference && workspace_.defined() && workspace_.nbytes() >= workspace;
  if (!keep_workspace) workspace_ = workspace ? Tensor::empty({static_cast<int64_t>(workspace)}, DType::kU8, dev) : Tensor();
  forward_done_ = false;
}

int Graph::taken_input(size_t i, std::span<const int64_t> last_reader) const {
  const PlanNode& node = plan_.nodes()[i];
  const int k = node.kernel->signature().output_may_take_input;
  if (k < 0 || static_cast<size_t>(k) >= node.inputs.size()) return -1;
  const int p = node.inputs[static_cast<size_t>(k)];
  if (p == kDataInput || readable_[static_cast<size_t>(p)] || last_reader[static_cast<size_t>(p)] != static_cast<int64_t>(i)) return -1;
  if (std::count(node.inputs.begin(), node.inputs.end(), p) != 1) return -1;  // also read through another input
  return p;
}

void Graph::share_inference_buffers() {
  const auto& nodes = plan_.nodes();
  const size_t n = nodes.size();
  const Device dev = options_.device;
  readable_.assign(n, false);
  std::vector<int64_t> last_reader(n, -1);
  for (size_t i = 0; i < n; ++i) {
    readable_[i] = mem_[i].is_output;
    for (int p : nodes[i].inputs)
      if (p != kDataInput) last_reader[static_cast<size_t>(p)] = static_cast<int64_t>(i);
  }
  for (const std::string& name : options_.keep) {
    const int k = plan_.find(name);
    FASTNN_CHECK(k >= 0, "graph '", plan_.net_name(), "': no layer '", name, "' to keep");
    readable_[static_cast<size_t>(k)] = true;
  }
  // Layers in order: each output takes the free buffer that fits it most tightly (else the largest free
  // one, which grows, else a new one); a buffer is free again once its last reader has run. A layer's
  // output is placed before its inputs are released, so it never shares a buffer with them, except the
  // one input its op lets the output take (OpSignature::output_may_take_input) when this layer reads
  // it last and through no other input.
  std::vector<size_t> need, owner(n), free;
  layers_over_input_ = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t bytes = static_cast<size_t>(shape_numel(nodes[i].output_shape)) * dtype_size(output_dtype(i));
    const int taken = taken_input(i, last_reader);
    size_t id = need.size();
    if (taken >= 0) {
      id = owner[static_cast<size_t>(taken)];
      ++layers_over_input_;
    } else {
      auto better = [&](size_t a, size_t b) {  // buffer a suits this output better than buffer b
        const bool fa = need[a] >= bytes, fb = need[b] >= bytes;
        if (fa != fb) return fa;
        return fa ? need[a] < need[b] : need[a] > need[b];
      };
      auto best = free.end();
      for (auto it = free.begin(); it != free.end(); ++it)
        if (best == free.end() || better(*it, *best)) best = it;
      if (best != free.end()) {
        id = *best;
        free.erase(best);
      } else {
        need.push_back(0);
      }
    }
    need[id] = std::max(need[id], bytes);
    owner[i] = id;
    for (int p : nodes[i].inputs) {
      if (p == kDataInput || p == taken) continue;
      const size_t q = static_cast<size_t>(p);
      if (!readable_[q] && last_reader[q] == static_cast<int64_t>(i) && std::find(free.begin(), free.end(), owner[q]) == free.end())
        free.push_back(owner[q]);
    }
    if (!readable_[i] && last_reader[i] < 0) free.push_back(id);  // nobody reads it
  }
  // Buffers only grow: a smaller batch after a larger one allocates nothing.
  auto grow = [dev](std::vector<std::shared_ptr<Storage>>& pool, const std::vector<size_t>& bytes) {
    pool.resize(bytes.size());
    for (size_t k = 0; k < bytes.size(); ++k)
      if (!pool[k] || pool[k]->bytes() < bytes[k]) pool[k] = allocate_storage(dev, std::max<size_t>(bytes[k], 1));
  };
  grow(pool_, need);
  std::vector<size_t> saved_need;
  for (size_t i = 0; i < n; ++i) {
    const auto& saved = nodes[i].kernel->signature().saved;
    if (saved_need.size() < saved.size()) saved_need.resize(saved.size(), 0);
    for (size_t k = 0; k < saved.size(); ++k)
      saved_need[k] = std::max(saved_need[k], static_cast<size_t>(shape_numel(saved[k].shape)) * dtype_size(saved[k].dtype));
  }
  grow(saved_pool_, saved_need);
  for (size_t i = 0; i < n; ++i) {
    NodeMemory& m = mem_[i];
    m.outputs = {Tensor(nodes[i].output_shape, output_dtype(i), pool_[owner[i]])};
    m.saved.clear();
    const auto& saved = nodes[i].kernel->signature().saved;
    for (size_t k = 0; k < saved.size(); ++k) m.saved.push_back(Tensor(saved[k].shape, saved[k].dtype, saved_pool_[k]));
  }
}

void Graph::initialize(uint64_t seed) {
  const bool on_host = options_.device == Device::kCpu;
  FASTNN_CHECK(on_host || options_.upload, "graph initialisation of a ", device_name(options_.device),
               " graph needs GraphOptions::upload");
  // Draws into the tensor itself on the CPU, else into a host tensor that is then uploaded. f16/bf16
  // tensors are drawn in f32 (the init rules are f32/f64) and rounded, so they hold the f32 graph's
  // initial values, rounded.
  auto init = [&](Tensor& dst, const auto& fill) {
    const bool half = dst.dtype() == DType::kF16 || dst.dtype() == DType::kBF16;
    if (on_host && !half) return fill(dst);
    Tensor host = Tensor::empty(dst.shape(), half ? DType::kF32 : dst.dtype());
    fill(host);
    if (half) host = host.to(dst.dtype());
    if (on_host) std::memcpy(dst.raw(), host.raw(), host.nbytes());
    else options_.upload(host, dst);
  };
  for (size_t i = 0; i < mem_.size(); ++i) {
    const PlanNode& node = plan_.nodes()[i];
    for (size_t k = 0; k < node.params.size(); ++k) {
      const PlannedTensor& p = node.params[k];
      init(mem_[i].params[k], [&](Tensor& t) {
        if (p.trainable && !options_.draw_variables) t.zero();
        else if (p.init) ops::init_tensor(t, *p.init, p.spec.fan_in, p.spec.fan_out, param_seed(seed, p.name));
        else ops::init_tensor(t, p.spec, param_seed(seed, p.name));
      });
    }
    for (size_t k = 0; k < node.state.size(); ++k)
      init(mem_[i].state[k], [&](Tensor& t) {
        if (!options_.draw_variables) t.zero();
        else ops::init_tensor(t, node.state[k].spec, param_seed(seed, node.state[k].name));
      });
  }
}

void Graph::set_batch_size(int64_t batch_size) {
  if (batch_size == plan_.batch_size()) return;
  const bool keep = options_.inference && options_.device == Device::kCpu;
  auto kept = std::find_if(kept_plans_.begin(), kept_plans_.end(), [&](const NetPlan& p) { return p.batch_size() == batch_size; });
  std::optional<NetPlan> plan;
  if (kept != kept_plans_.end()) {
    plan.emplace(std::move(*kept));
    kept_plans_.erase(kept);
  } else {
    plan.emplace(NetPlan::make(net_, plan_options(options_, batch_size)));
    FASTNN_CHECK(plan->nodes().size() == plan_.nodes().size(), "set_batch_size: the plan changed shape");
    for (size_t i = 0; i < plan->nodes().size(); ++i) plan->nodes()[i].kernel->inherit_derived(*plan_.nodes()[i].kernel);
  }
  if (keep) {
    kept_plans_.push_back(std::move(plan_));
    if (kept_plans_.size() > kKeptPlans) kept_plans_.erase(kept_plans_.begin());
  }
  plan_ = std::move(*plan);
  options_.batch_size = batch_size;
  allocate_activations();
}

void Graph::check_images(const Tensor& images) const {
  const Layout other = options_.layout == Layout::kNHWC ? Layout::kNCHW : Layout::kNHWC;
  FASTNN_CHECK(images.defined() && images.shape() == plan_.input_shape() && images.dtype() == options_.dtype &&
                   images.device() == options_.device && images.layout() != other,
               "graph '", plan_.net_name(), "': images are ", images.defined() ? images.describe() : "undefined",
               ", expected ", dtype_name(options_.dtype), shape_str(plan_.input_shape()), " ",
               layout_name(options_.layout), " on ", device_name(options_.device));
}

void Graph::forward(const Tensor& images, bool training, uint64_t step, uint64_t micro_batch) {
  check_images(images);
  FASTNN_CHECK(!(training && options_.inference), "graph '", plan_.net_name(), "': an inference graph runs in evaluation mode only");
  input_ = images;
  const auto& nodes = plan_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeMemory& m = mem_[i];
    for (size_t s = 0; s < nodes[i].inputs.size(); ++s)
      if (nodes[i].inputs[s] == kDataInput) m.inputs[s] = images;
    ops::ForwardArgs a;
    a.inputs = m.inputs;
    a.params = m.params;
    a.state = m.state;
    a.outputs = m.outputs;
    a.saved = m.saved;
    a.workspace = workspace_;
    a.training = training;
    a.seed = micro_batch == 0 ? m.dropout_seed : splitmix(m.dropout_seed ^ micro_batch);
    a.step = step;
    a.device_step = device_step_;
    a.replicas = replicas_;
    a.params_write_counted = options_.inference;
    if (observer_) observer_->layer_begin(i, false);
    nodes[i].kernel->forward(a);
    if (observer_) observer_->layer_end(i, false);
  }
  forward_done_ = true;
  last_training_ = training;
}

void Graph::backward() {
  FASTNN_CHECK(!options_.inference, "graph '", plan_.net_name(), "': an inference graph has no backward()");
  FASTNN_CHECK(forward_done_, "graph '", plan_.net_name(), "': backward() needs a forward() first");
  const auto& nodes = plan_.nodes();
  std::vector<bool> written(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) written[i] = mem_[i].is_output;
  std::vector<std::pair<int, size_t>> pending;  // (producer, scratch buffers used) of one call
  const auto needs_grad = [&](int p) { return mem_[static_cast<size_t>(p)].needs_grad; };
  for (size_t i = nodes.size(); i-- > 0;) {
    NodeMemory& m = mem_[i];
    if (!m.needs_grad) continue;
    FASTNN_CHECK(written[i], "graph: no gradient reached layer '", nodes[i].name, "'");
    const PlanNode& node = nodes[i];
    m.d_inputs.assign(node.inputs.size(), Tensor());
    pending.clear();
    uint64_t accumulate = 0;
    for (size_t s = 0; s < node.inputs.size(); ++s) {
      const GradSlot slot = grad_slot(node, s, needs_grad, written);
      if (slot == GradSlot::kNone) continue;
      const int p = node.inputs[s];
      NodeMemory& pm = mem_[static_cast<size_t>(p)];
      if (slot != GradSlot::kScratch) {  // the producer's own buffer: written first, or added into
        m.d_inputs[s] = pm.d_outputs[0];
        if (slot == GradSlot::kAddsInto) accumulate |= uint64_t{1} << s;
        continue;
      }
      auto it = std::find_if(pending.begin(), pending.end(), [&](const auto& e) { return e.first == p; });
      if (it == pending.end()) it = pending.insert(pending.end(), {p, 0});
      FASTNN_CHECK(it->second < pm.scratch.size(), "graph: too few gradient buffers for layer '",
                   nodes[static_cast<size_t>(p)].name, "'");
      m.d_inputs[s] = pm.scratch[it->second++];
    }
    ops::BackwardArgs a;
    a.inputs = m.inputs;
    a.params = m.params;
    a.state = m.state;
    a.outputs = m.outputs;
    a.saved = m.saved;
    a.d_outputs = m.d_outputs;
    a.d_inputs = m.d_inputs;
    a.d_params = m.param_grads;
    a.workspace = workspace_;
    a.training = last_training_;
    a.replicas = replicas_;
    a.accumulate = accumulate;
    if (observer_) observer_->layer_begin(i, true);
    node.kernel->backward(a);
    for (auto [p, used] : pending) {
      NodeMemory& pm = mem_[static_cast<size_t>(p)];
      for (size_t k = 0; k < used; ++k) {
        const Tensor in[2] = {pm.d_outputs[0], pm.scratch[k]};
        Tensor out[1] = {pm.d_outputs[0]};
        ops::ForwardArgs fa;
        fa.inputs = in;
        fa.outputs = out;
        pm.accumulate->forward(fa);
      }
    }
    if (observer_) observer_->layer_end(i, true);
    m.d_inputs.clear();  // drop the extra handles
  }
}

const Tensor& Graph::output(size_t k) const {
  FASTNN_CHECK(k < num_outputs(), "graph output ", k, " of ", num_outputs());
  return mem_[static_cast<size_t>(k == 0 ? plan_.logits_node() : plan_.aux_logits_node())].outputs[0];
}

Tensor& Graph::output_grad(size_t k) {
  FASTNN_CHECK(k < num_outputs(), "graph output ", k, " of ", num_outputs());
  FASTNN_CHECK(!options_.inference, "graph '", plan_.net_name(), "': an inference graph has no output gradients");
  return mem_[static_cast<size_t>(k == 0 ? plan_.logits_node() : plan_.aux_logits_node())].d_outputs[0];
}

const Tensor& Graph::layer_output(const std::string& layer_name) const {
  const int i = plan_.find(layer_name);
  FASTNN_CHECK(i >= 0, "graph '", plan_.net_name(), "' has no layer '", layer_name, "'");
  FASTNN_CHECK(!options_.inference || readable_[static_cast<size_t>(i)], "graph '", plan_.net_name(), "': layer '", layer_name,
               "' shares its buffer with later layers in this inference graph (name it in GraphOptions::keep)");
  return mem_[static_cast<size_t>(i)].outputs[0];
}

std::vector<NamedTensor> Graph::parameters() const {
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < mem_.size(); ++i) {
    const PlanNode& node = plan_.nodes()[i];
    for (size_t k = 0; k < node.params.size(); ++k)
      if (node.params[k].trainable)
        out.push_back({node.params[k].name, mem_[i].params[k], mem_[i].param_grads[k], node.params[k].weight_decay});
  }
  return out;
}

std::vector<NamedTensor> Graph::state() const {
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < mem_.size(); ++i) {
    const PlanNode& node = plan_.nodes()[i];
    for (size_t k = 0; k < node.state.size(); ++k) out.push_back({node.state[k].name, mem_[i].state[k], {}, false});
  }
  return out;
}

std::vector<NamedTensor> Graph::variables() const {
  std::vector<NamedTensor> out = parameters();
  for (NamedTensor& s : state()) out.push_back(std::move(s));
  return out;
}

std::vector<ParamRef> Graph::param_refs() const {
  FASTNN_CHECK(!options_.inference, "param_refs: an inference graph has no gradients");
  FASTNN_CHECK(options_.dtype == DType::kF32 && options_.device == Device::kCpu,
               "param_refs: the optimizer takes f32 CPU parameters; this graph is ", dtype_name(options_.dtype),
               " on ", device_name(options_.device));
  std::vector<ParamRef> refs;
  for (const NamedTensor& p : parameters()) {
    Tensor v = p.value, g = p.grad;
    refs.push_back(ParamRef{p.name, v.data<float>(), g.data<float>(), static_cast<size_t>(v.numel()), p.weight_decay});
  }
  return refs;
}

size_t Graph::activation_bytes() const {
  size_t n = workspace_.defined() ? workspace_.nbytes() : 0;
  if (options_.inference) {
    for (const auto& b : pool_) n += b->bytes();
    for (const auto& b : saved_pool_) n += b->bytes();
    return n;
  }
  for (const NodeMemory& m : mem_) n += bytes_of(m.outputs) + bytes_of(m.saved) + bytes_of(m.d_outputs) + bytes_of(m.scratch);
  return n;
}

size_t Graph::parameter_bytes() const {
  size_t n = 0;
  for (const NodeMemory& m : mem_) n += bytes_of(m.params) + bytes_of(m.param_grads) + bytes_of(m.state);
  return n;
}

}  // namespace fastnn::graph
