#include "trainer/graph/net_plan.h"

#include "trainer/ops/fused.h"
#include "trainer/ops/layout_adapter.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/check.h"
#include "trainer/ops/conv2d.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/fully_connected.h"

namespace fastnn::graph {

const ops::OpRegistry& builtin_op_registry() {
  static const ops::OpRegistry registry = [] {
    ops::OpRegistry r;
    ops::register_builtin_ops(r);
    return r;
  }();
  return registry;
}

const ops::OpRegistry& cpu_bf16_op_registry() {
  static const ops::OpRegistry registry = [] {
    FASTNN_CHECK(ops::cpu_bf16_available(), "bf16 convolutions on the CPU need oneDNN with bf16 instructions; this CPU's kernels: ",
                 ops::cpu_kernels_description());
    ops::OpRegistry r = builtin_op_registry();
#ifdef FASTNN_HAVE_DNNL
    ops::register_bf16_convolutions_dnnl(r);
    ops::register_bf16_fully_connected_dnnl(r);
#endif
    return r;
  }();
  return registry;
}

bool multiplies_in_cpu_bf16(std::string_view op) { return op.starts_with("conv2d") || op == "fully_connected"; }

int64_t PlanNode::trainable_params() const {
  int64_t n = 0;
  for (const PlannedTensor& p : params)
    if (p.trainable) n += p.numel();
  return n;
}

namespace {

constexpr int64_t kMaxImageDim = 65536;
constexpr int kMaxLayers = 100000;

bool valid_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == '-';
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean 'x' or 'y'?)" for the names nearest to `name`, or "".
std::string suggestion(const std::string& name, const std::vector<std::string>& names) {
  std::vector<std::pair<size_t, std::string>> scored;
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  for (const std::string& n : names)
    if (const size_t d = edit_distance(name, n); d <= limit) scored.emplace_back(d, n);
  if (scored.empty()) return "";
  std::sort(scored.begin(), scored.end());
  std::string s = " (did you mean ";
  for (size_t i = 0; i < scored.size() && i < 3; ++i) s += str(i ? " or " : "", "'", scored[i].second, "'");
  return s + "?)";
}

struct Parsed {
  const LayerDef* def = nullptr;
  LoweredLayer lowered;
  std::vector<int> inputs;  // declaration indices, kDataInput for data
};

std::vector<Parsed> parse_layers(const NetDef& net) {
  const int n = net.layers_size();
  if (n == 0) throw ConfigError("net: no layers");
  if (n > kMaxLayers) throw ConfigError(str("net: ", n, " layers (at most ", kMaxLayers, ")"));
  std::unordered_map<std::string, int> index;
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    const std::string& name = net.layers(i).name();
    if (name.empty()) throw ConfigError(str("net: layer #", i, " has no name"));
    for (char c : name)
      if (!valid_name_char(c))
        throw ConfigError(str("net: layer name '", name, "' has a character outside [A-Za-z0-9_./-]"));
    if (name == "data") throw ConfigError(str("net: layer #", i, " is named 'data', which names the input batch"));
    for (char c : net.layers(i).param_scope())
      if (!valid_name_char(c))
        throw ConfigError(str("net: layer '", name, "': param_scope has a character outside [A-Za-z0-9_./-]"));
    if (!index.emplace(name, i).second)
      throw ConfigError(str("net: layer name '", name, "' is used by layers #", index[name], " and #", i));
    names.push_back(name);
  }
  std::vector<Parsed> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Parsed& p = out[static_cast<size_t>(i)];
    p.def = &net.layers(i);
    p.lowered = lower_layer(*p.def);
    const size_t k = static_cast<size_t>(p.def->inputs_size());
    if (k < p.lowered.min_inputs || k > p.lowered.max_inputs) {
      const std::string want = p.lowered.min_inputs == p.lowered.max_inputs
                                   ? str(p.lowered.min_inputs)
                                   : str(p.lowered.min_inputs, " to ", p.lowered.max_inputs);
      throw ConfigError(str("layer '", p.def->name(), "' (", p.lowered.type, ") takes ", want, " input",
                            p.lowered.max_inputs == 1 ? "" : "s", ", got ", k));
    }
    for (const std::string& in : p.def->inputs()) {
      if (in == "data") {
        p.inputs.push_back(kDataInput);
        continue;
      }
      auto it = index.find(in);
      if (it == index.end())
        throw ConfigError(str("layer '", p.def->name(), "': input '", in, "' is neither 'data' nor a layer",
                              suggestion(in, names)));
      if (it->second == i) throw ConfigError(str("layer '", p.def->name(), "' reads its own output"));
      p.inputs.push_back(it->second);
    }
  }
  return out;
}

// Kahn's algorithm, smallest declaration index first; ConfigError with one cycle if there is any.
std::vector<int> topological_order(const std::vector<Parsed>& layers) {
  const int n = static_cast<int>(layers.size());
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int p : layers[static_cast<size_t>(i)].inputs)
      if (p != kDataInput) {
        ++pending[static_cast<size_t>(i)];
        consumers[static_cast<size_t>(p)].push_back(i);
      }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) == n) return order;
  // Every unsorted layer has an unsorted input: walk inputs until a layer repeats.
  int at = 0;
  while (pending[static_cast<size_t>(at)] == 0) ++at;
  std::vector<int> path;
  std::vector<int> seen_at(static_cast<size_t>(n), -1);
  while (seen_at[static_cast<size_t>(at)] < 0) {
    seen_at[static_cast<size_t>(at)] = static_cast<int>(path.size());
    path.push_back(at);
    for (int p : layers[static_cast<size_t>(at)].inputs)
      if (p != kDataInput && pending[static_cast<size_t>(p)] > 0) {
        at = p;
        break;
      }
  }
  // path[j + 1] is an input of path[j], and `at` an input of path.back(): print producer -> consumer.
  std::string cycle = layers[static_cast<size_t>(at)].def->name();
  for (size_t k = path.size(); k-- > static_cast<size_t>(seen_at[static_cast<size_t>(at)]);)
    cycle += " -> " + layers[static_cast<size_t>(path[k])].def->name();
  throw ConfigError(str("net: the layers form a cycle: ", cycle));
}

int64_t node_macs(const PlanNode& n) {
  const ops::OpSignature& sig = n.kernel->signature();
  if (n.op == "conv2d" || n.op == "depthwise_conv2d") {
    const Shape& w = sig.params[0].shape;  // [K, C/g, R, S]; depthwise [C*M, 1, R, S]
    return shape_numel(n.output_shape) * w[1] * w[2] * w[3];
  }
  if (n.op == "fully_connected") {
    const Shape& w = sig.params[0].shape;  // [units, D]
    return n.output_shape[0] * w[0] * w[1];
  }
  return 0;
}

}  // namespace

NetPlan NetPlan::make(const NetDef& net, const PlanOptions& options) {
  NetPlan plan;
  plan.options_ = options;
  if (!plan.options_.registry) plan.options_.registry = &builtin_op_registry();
  const ops::OpRegistry& registry = *plan.options_.registry;
  plan.net_name_ = net.name();
  if (options.batch_size < 1 || options.batch_size > (int64_t{1} << 24))
    throw ConfigError(str("net: batch size must be in [1, 2^24], got ", options.batch_size));
  const InputDef& in = net.input();
  for (auto [what, v] : {std::pair{"channels", int64_t{in.channels()}}, std::pair{"height", int64_t{in.height()}},
                         std::pair{"width", int64_t{in.width()}}})
    if (v < 1 || v > kMaxImageDim)
      throw ConfigError(str("net: input ", what, " must be in [1, ", kMaxImageDim, "], got ", v,
                            v == 0 ? " (set net.input)" : ""));
  plan.input_shape_ = {options.batch_size, in.channels(), in.height(), in.width()};
  shape_numel(plan.input_shape_);

  std::vector<Parsed> layers = parse_layers(net);
  const std::vector<int> order = topological_order(layers);

  std::unordered_map<std::string, int> by_name;
  for (size_t i = 0; i < layers.size(); ++i) by_name.emplace(layers[i].def->name(), static_cast<int>(i));
  auto output_layer = [&](const std::string& field, const std::string& name) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      std::vector<std::string> names;
      for (const Parsed& p : layers) names.push_back(p.def->name());
      throw ConfigError(str("net: ", field, " '", name, "' is not a layer", suggestion(name, names)));
    }
    return it->second;
  };
  if (!net.has_logits()) throw ConfigError("net: `logits` must name the layer that outputs the class scores");
  const int logits_decl = output_layer("logits", net.logits());
  const int aux_decl = net.has_aux_logits() ? output_layer("aux_logits", net.aux_logits()) : -1;
  if (aux_decl == logits_decl) throw ConfigError("net: aux_logits and logits name the same layer");
  if (!(net.aux_loss_weight() >= 0)) throw ConfigError(str("net: aux_loss_weight must be >= 0, got ", net.aux_loss_weight()));
  plan.aux_loss_weight_ = widen(net.aux_loss_weight());

  // Every layer must feed an output: walk back from the outputs.
  std::vector<bool> live(layers.size(), false);
  std::vector<int> stack{logits_decl};
  if (aux_decl >= 0) stack.push_back(aux_decl);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (live[static_cast<size_t>(i)]) continue;
    live[static_cast<size_t>(i)] = true;
    for (int p : layers[static_cast<size_t>(i)].inputs)
      if (p != kDataInput) stack.push_back(p);
  }
  std::string dead;
  int dead_count = 0;
  for (size_t i = 0; i < layers.size(); ++i)
    if (!live[i] && dead_count++ < 5) dead += str(dead.empty() ? "" : ", ", "'", layers[i].def->name(), "'");
  if (dead_count)
    throw ConfigError(str("net: ", dead_count, " layer(s) feed neither logits nor aux_logits: ", dead,
                          dead_count > 5 ? ", ..." : ""));

  // Kernels in topological order: shape inference.
  std::vector<int> node_of(layers.size(), -1);
  std::vector<Shape> logical;  // per node: its output in NCHW, what the kernels are created from
  const Shape logical_input = plan.input_shape_;
  const bool nhwc = options.layout == Layout::kNHWC;
  FASTNN_CHECK(options.layout == Layout::kNCHW || nhwc, "net plan: layout must be NCHW or NHWC");
  if (nhwc) plan.input_shape_ = ops::nhwc_shape(logical_input);
  std::set<std::string> param_names;
  plan.nodes_.reserve(layers.size());
  for (int decl : order) {
    Parsed& p = layers[static_cast<size_t>(decl)];
    PlanNode node;
    node.name = p.def->name();
    node.type = p.lowered.type;
    node.op = p.lowered.op;
    node.attrs = p.lowered.attrs;
    node.declared_at = decl;
    std::vector<ops::TensorSpec> specs;
    for (int in_decl : p.inputs) {
      if (in_decl == kDataInput) {
        node.inputs.push_back(kDataInput);
        specs.push_back(ops::TensorSpec{.name = "data", .shape = logical_input, .dtype = options.dtype});
      } else {
        const int src = node_of[static_cast<size_t>(in_decl)];
        node.inputs.push_back(src);
        specs.push_back(ops::TensorSpec{.name = plan.nodes_[static_cast<size_t>(src)].name,
                                        .shape = logical[static_cast<size_t>(src)], .dtype = options.dtype});
      }
    }
    try {
      node.kernel = registry.create(node.op, options.device, node.attrs, specs);
    } catch (const ConfigError& e) {
      std::string shapes;
      for (const ops::TensorSpec& s : specs) shapes += str(shapes.empty() ? "" : ", ", shape_str(s.shape));
      throw ConfigError(str("layer '", node.name, "' (", node.type, ") on input ", shapes, ": ", e.what()));
    }
    logical.push_back(node.kernel->signature().outputs.empty() ? Shape{} : node.kernel->signature().outputs[0].shape);
    // Every 4-D tensor of the layer in NHWC: the op's own NHWC kernel for the device when it has one,
    // else its NCHW kernel inside the adapter; element-wise ones (activation_layout kNone) take NHWC as
    // it is.
    if (nhwc && node.kernel->signature().activation_layout == Layout::kNCHW) {
      std::unique_ptr<ops::OpKernel> own = registry.create_nhwc(node.op, options.device, node.attrs, specs);
      node.kernel = own ? std::move(own) : ops::adapt_to_nhwc(std::move(node.kernel));
    } else if (nhwc) {  // the same op over the tensors as they are laid out
      for (ops::TensorSpec& spec : specs) spec.shape = ops::nhwc_shape(spec.shape);
      node.kernel = registry.create(node.op, options.device, node.attrs, specs);
    }
    const ops::OpSignature& sig = node.kernel->signature();
    const std::string& param_scope = p.def->param_scope().empty() ? node.name : p.def->param_scope();
    FASTNN_CHECK(sig.outputs.size() == 1, "layer '", node.name, "': op ", node.op, " has ", sig.outputs.size(),
                 " outputs; layers need exactly one");
    node.output_shape = sig.outputs[0].shape;
    for (const ops::TensorSpec& s : sig.params) {
      auto it = p.lowered.params.find(s.name);
      FASTNN_CHECK(it != p.lowered.params.end(), "layer '", node.name, "': no rule for op param ", s.name);
      const ParamRule& r = it->second;
      node.params.push_back(PlannedTensor{param_scope + "/" + r.local_name, s, r.trainable,
                                          r.trainable && r.weight_decay, r.init});
    }
    for (const ops::TensorSpec& s : sig.state) {
      auto it = p.lowered.state.find(s.name);
      FASTNN_CHECK(it != p.lowered.state.end(), "layer '", node.name, "': no name for op state ", s.name);
      node.state.push_back(PlannedTensor{param_scope + "/" + it->second, s, false, false, std::nullopt});
    }
    // param_scope lets two layers share a scope; a name given twice would alias two tensors.
    for (const auto* list : {&node.params, &node.state})
      for (const PlannedTensor& t : *list)
        if (!param_names.insert(t.name).second)
          throw ConfigError(str("layer '", node.name, "': parameter name '", t.name, "' is used twice"));
    node.macs = node_macs(node);
    node_of[static_cast<size_t>(decl)] = static_cast<int>(plan.nodes_.size());
    plan.nodes_.push_back(std::move(node));
  }
  plan.logits_ = node_of[static_cast<size_t>(logits_decl)];
  plan.aux_logits_ = aux_decl >= 0 ? node_of[static_cast<size_t>(aux_decl)] : -1;

  const Shape& ls = plan.nodes_[static_cast<size_t>(plan.logits_)].output_shape;
  if (ls.size() != 2)
    throw ConfigError(str("net: logits layer '", net.logits(), "' outputs ", shape_str(ls),
                          "; it must be [batch, classes] (end with a fully_connected or global_avg_pool layer)"));
  if (plan.aux_logits_ >= 0) {
    const Shape& as = plan.nodes_[static_cast<size_t>(plan.aux_logits_)].output_shape;
    if (as != ls)
      throw ConfigError(str("net: aux_logits layer '", net.aux_logits(), "' outputs ", shape_str(as),
                            ", logits ", shape_str(ls), "; they must match"));
  }
  if (options.fuse) plan.fuse_activations();
  if (options.fuse_conv_bn) plan.fuse_conv_batch_norms();
  if (options.fold_batch_norms) plan.fold_batch_norms();
  return plan;
}

void NetPlan::fuse_activations() {
  const size_t n = nodes_.size();
  std::vector<int> readers = reader_counts();
  std::vector<int> into(n, -1);  // a fused-away relu -> the node it joined
  for (size_t j = 0; j < n; ++j) {
    PlanNode& tail = nodes_[j];
    const bool relu6 = tail.op == "relu6";  // MobileNet's: fused after a batch_norm only
    if ((tail.op != "relu" && !relu6) || tail.inputs.size() != 1 || tail.inputs[0] == kDataInput) continue;
    if (static_cast<int>(j) == logits_ || static_cast<int>(j) == aux_logits_) continue;
    const auto i = static_cast<size_t>(tail.inputs[0]);
    PlanNode& head = nodes_[i];
    if ((head.op != "batch_norm" && (head.op != "add" || relu6)) || readers[i] != 1) continue;
    if (static_cast<int>(i) == logits_ || static_cast<int>(i) == aux_logits_) continue;
    head.kernel = ops::make_fused_kernel(std::move(head.kernel), std::move(tail.kernel), options_.registry);
    head.op += "+" + tail.op;
    head.type += "+" + tail.type;
    head.output_shape = head.kernel->signature().outputs[0].shape;
    into[j] = static_cast<int>(i);
  }
  drop_fused(into);
  fuse_residual_batch_norms();
}

// A batch_norm read only by a two-input add+relu (a residual unit's last batch norm) joins it at the
// add's place, where its input and the add's other input are both computed already: one node
// "batch_norm+add+relu" with the batch norm's input, then the other addend; the add keeps its name.
// Only where no node between the two has parameters or state, so that parameters and statistics keep
// their order (optimizer slots, the gradient norm's summation order, a master copy matched by position):
// in the zoo's residual units the batch norm is the node just before its add.
void NetPlan::fuse_residual_batch_norms() {
  const size_t n = nodes_.size();
  std::vector<int> readers = reader_counts();
  std::vector<int> into(n, -1);  // a fused-away batch_norm -> the add it joined
  for (size_t j = 0; j < n; ++j) {
    PlanNode& add = nodes_[j];
    if (add.op != "add+relu" || add.inputs.size() != 2) continue;
    int slot = -1;  // the later of the qualifying addends: the residual branch where both are batch norms
    for (int k = 0; k < 2; ++k) {
      const int i = add.inputs[static_cast<size_t>(k)];
      if (i == kDataInput || nodes_[static_cast<size_t>(i)].op != "batch_norm" || readers[static_cast<size_t>(i)] != 1)
        continue;
      if (i == logits_ || i == aux_logits_ || into[static_cast<size_t>(i)] >= 0) continue;
      if (!nothing_stateful_between(static_cast<size_t>(i), j)) continue;
      if (slot < 0 || i > add.inputs[static_cast<size_t>(slot)]) slot = k;
    }
    if (slot < 0) continue;
    const auto i = static_cast<size_t>(add.inputs[static_cast<size_t>(slot)]);
    PlanNode& bn = nodes_[i];
    const int other = add.inputs[static_cast<size_t>(1 - slot)];
    add.kernel = ops::make_fused_kernel(std::move(bn.kernel), std::move(add.kernel), options_.registry,
                                        static_cast<size_t>(slot));
    add.inputs = bn.inputs;
    add.inputs.push_back(other);
    add.attrs = std::move(bn.attrs);  // the add has none; export reads the batch norm's (epsilon) here
    add.params = std::move(bn.params);
    add.state = std::move(bn.state);
    add.op = bn.op + "+" + add.op;
    add.type = bn.type + "+" + add.type;
    into[i] = static_cast<int>(j);
  }
  drop_fused(into);
}

bool NetPlan::nothing_stateful_between(size_t from, size_t to) const {
  for (size_t m = from + 1; m < to; ++m)
    if (!nodes_[m].params.empty() || !nodes_[m].state.empty()) return false;
  return true;
}

void NetPlan::fuse_conv_batch_norms() {
  const size_t n = nodes_.size();
  std::vector<int> readers = reader_counts();
  std::vector<int> into(n, -1);  // a fused-away conv2d -> the batch norm node it joined
  for (size_t j = 0; j < n; ++j) {
    const std::optional<size_t> i = conv_read_only_by(j, readers);
    if (!i || nodes_[*i].op != "conv2d") continue;
    PlanNode& bn = nodes_[j];
    const int x = nodes_[*i].inputs.empty() ? kDataInput : nodes_[*i].inputs[0];
    if (bn.inputs.size() > 1 && x != kDataInput && readers[static_cast<size_t>(x)] > 1) continue;
    std::unique_ptr<ops::OpKernel> fused = ops::make_fused_kernel(std::move(nodes_[*i].kernel), std::move(bn.kernel), options_.registry);
    join_conv_into(*i, j, std::move(fused));
    into[*i] = static_cast<int>(j);
  }
  drop_fused(into);
}

void NetPlan::fold_batch_norms() {
  const ops::OpRegistry& registry = options_.registry ? *options_.registry : builtin_op_registry();
  const size_t n = nodes_.size();
  std::vector<int> readers = reader_counts();
  // Every fold is made before any joins its nodes: which activations stay bf16 depends on the folds
  // around each one.
  std::vector<BatchNormFoldPair> folds;
  const auto make = [&](size_t i, size_t j, ops::BatchNormFold::Bf16Activations bf16_activations) {
    const PlanNode& conv = nodes_[i];
    const PlanNode& bn = nodes_[j];
    const std::vector<ops::TensorSpec> nchw_inputs = nchw_inputs_of(conv);
    return registry.create_batch_norm_fold({conv.op, conv.attrs, nchw_inputs, *conv.kernel, bn.op, bn.attrs, *bn.kernel,
                                            options_.fold_in_bf16, options_.fold_job_images, bf16_activations});
  };
  for (size_t j = 0; j < n; ++j) {
    const std::optional<size_t> i = conv_read_only_by(j, readers);
    if (!i) continue;
    std::unique_ptr<ops::OpKernel> folded = make(*i, j, {});
    if (folded) folds.push_back({*i, j, std::move(folded)});
  }
  if (options_.fold_in_bf16) {
    const std::vector<bool> bf16 = bf16_outputs(folds, registry);
    const auto written_in_bf16 = [&](int node) { return node != kDataInput && bf16[static_cast<size_t>(node)]; };
    for (BatchNormFoldPair& f : folds) {
      const PlanNode& conv = nodes_[f.conv];
      const PlanNode& bn = nodes_[f.bn];
      const ops::BatchNormFold::Bf16Activations a{
          .input = !conv.inputs.empty() && written_in_bf16(conv.inputs[0]),
          .residual = bn.op == "batch_norm+add+relu" && bn.inputs.size() > 1 && written_in_bf16(bn.inputs[1]),
          .output = bf16[f.bn]};
      if (!a.any()) continue;
      f.kernel = make(f.conv, f.bn, a);
      FASTNN_CHECK(f.kernel, "graph '", net_name_, "': layer '", bn.name, "' has no fold with bfloat16 activations");
    }
    // The other readers of bf16 activations (pooling).
    for (PlanNode& node : nodes_) {
      if (node.inputs.size() != 1 || !written_in_bf16(node.inputs[0]) || !registry.has_bf16_input_kernel(node.op, options_.device))
        continue;
      const bool out_bf16 = bf16[static_cast<size_t>(&node - nodes_.data())];
      node.kernel = registry.create_bf16_input_kernel(node.op, options_.device, node.attrs, nchw_inputs_of(node), out_bf16);
      FASTNN_CHECK(node.kernel, "graph '", net_name_, "': layer '", node.name, "' has no kernel for bfloat16 activations");
    }
  }
  std::vector<int> into(n, -1);  // a folded-away convolution -> the batch norm node it joined
  for (BatchNormFoldPair& f : folds) {
    join_conv_into(f.conv, f.bn, std::move(f.kernel));
    into[f.conv] = static_cast<int>(f.bn);
  }
  drop_fused(into);
}

// A node's input specs as an NCHW factory takes them (its kernel's, from NHWC where the plan is).
std::vector<ops::TensorSpec> NetPlan::nchw_inputs_of(const PlanNode& node) const {
  ops::TensorSpec x = node.kernel->signature().inputs[0];
  x.dtype = options_.dtype;
  if (options_.layout == Layout::kNHWC && x.shape.size() == 4) x.shape = {x.shape[0], x.shape[3], x.shape[1], x.shape[2]};
  return {x};
}

// The convolution (conv2d, depthwise_conv2d) that batch norm node j alone reads as its first input, where
// nothing between the two has parameters or state; nullopt otherwise.
std::optional<size_t> NetPlan::conv_read_only_by(size_t j, const std::vector<int>& readers) const {
  const PlanNode& bn = nodes_[j];
  if (bn.op.rfind("batch_norm", 0) != 0 || bn.inputs.empty() || bn.inputs[0] == kDataInput) return std::nullopt;
  const auto i = static_cast<size_t>(bn.inputs[0]);
  const PlanNode& conv = nodes_[i];
  if (conv.op != "conv2d" && conv.op != "depthwise_conv2d") return std::nullopt;
  if (readers[i] != 1 || static_cast<int>(i) == logits_ || static_cast<int>(i) == aux_logits_) return std::nullopt;
  if (!nothing_stateful_between(i, j)) return std::nullopt;
  return i;
}

void NetPlan::join_conv_into(size_t i, size_t j, std::unique_ptr<ops::OpKernel> kernel) {
  PlanNode& conv = nodes_[i];
  PlanNode& bn = nodes_[j];
  bn.kernel = std::move(kernel);
  std::vector<int> inputs = conv.inputs;
  inputs.insert(inputs.end(), bn.inputs.begin() + 1, bn.inputs.end());
  bn.inputs = std::move(inputs);
  bn.params.insert(bn.params.begin(), std::make_move_iterator(conv.params.begin()),
                   std::make_move_iterator(conv.params.end()));
  bn.state.insert(bn.state.begin(), std::make_move_iterator(conv.state.begin()),
                  std::make_move_iterator(conv.state.end()));
  bn.macs += conv.macs;
  bn.op = conv.op + "+" + bn.op;
  bn.type = conv.type + "+" + bn.type;
}

std::vector<int> NetPlan::reader_counts() const {
  std::vector<int> readers(nodes_.size(), 0);
  for (const PlanNode& node : nodes_)
    for (int p : node.inputs)
      if (p != kDataInput) ++readers[static_cast<size_t>(p)];
  return readers;
}

// Removes the nodes with into[k] >= 0 (each fused into node into[k]) and renumbers inputs, logits and
// fused_names_; a removed node's name finds the node it joined.
void NetPlan::drop_fused(const std::vector<int>& into) {
  const size_t n = nodes_.size();
  std::vector<int> index(n, -1);  // old node -> new node
  std::vector<PlanNode> kept;
  for (size_t k = 0; k < n; ++k)
    if (into[k] < 0) {
      index[k] = static_cast<int>(kept.size());
      kept.push_back(std::move(nodes_[k]));
    }
  for (size_t k = 0; k < n; ++k)
    if (into[k] >= 0) index[k] = index[static_cast<size_t>(into[k])];
  for (auto& [name, node] : fused_names_) node = index[static_cast<size_t>(node)];
  for (size_t k = 0; k < n; ++k)
    if (into[k] >= 0) fused_names_.push_back({nodes_[k].name, index[k]});
  for (PlanNode& node : kept)
    for (int& p : node.inputs)
      if (p != kDataInput) p = index[static_cast<size_t>(p)];
  logits_ = index[static_cast<size_t>(logits_)];
  if (aux_logits_ >= 0) aux_logits_ = index[static_cast<size_t>(aux_logits_)];
  nodes_ = std::move(kept);
}

int NetPlan::find(const std::string& layer_name) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == layer_name) return static_cast<int>(i);
  for (const auto& [name, node] : fused_names_)
    if (name == layer_name) return node;
  return -1;
}

int64_t NetPlan::trainable_param_count() const {
  int64_t n = 0;
  for (const PlanNode& node : nodes_) n += node.trainable_params();
  return n;
}

int64_t NetPlan::state_count() const {
  int64_t n = 0;
  for (const PlanNode& node : nodes_)
    for (const PlannedTensor& s : node.state) n += s.numel();
  return n;
}

int64_t NetPlan::macs() const {
  int64_t n = 0;
  for (const PlanNode& node : nodes_) n += node.macs;
  return n;
}

}  // namespace fastnn::graph
