#include "trainer/train_step.h"

#include <algorithm>

#include "core/check.h"
#include "trainer/ops/softmax_xent.h"

namespace fastnn {

namespace {

// A window into another storage (no views in Tensor): lets the losses and counts share one block so a
// device step reads them back with one copy.
class SubStorage final : public Storage {
 public:
  SubStorage(std::shared_ptr<Storage> parent, size_t offset, size_t bytes) : parent_(std::move(parent)) {
    data_ = static_cast<char*>(parent_->data()) + offset;
    bytes_ = bytes;
  }
  Device device() const override { return parent_->device(); }

 private:
  std::shared_ptr<Storage> parent_;
};

// Results block layout (bytes): loss[0] at 0, loss[1] at 16, top-1 count at 32, top-5 count at 40.
constexpr size_t kBlockBytes = 64, kLossOffset[2] = {0, 16}, kTop1Offset = 32, kTop5Offset = 40;

Tensor window(const Tensor& block, size_t offset, DType dt) {
  return Tensor({1}, dt, std::make_shared<SubStorage>(block.storage(), offset, dtype_size(dt)));
}

}  // namespace

// The loss and metric kernels with their buffers, for one batch size and label dtype.
struct TrainStep::Heads {
  int64_t batch = 0;
  DType label_dtype = DType::kI64;
  std::unique_ptr<ops::OpKernel> xent, top1, top5;
  // Per output (logits, aux): loss [1], probs [N, K], dloss [1] (loss_scale, or it x the aux weight).
  Tensor loss[2], probs[2], dloss[2];
  Tensor workspace, correct1, correct5;
  Tensor block, host_block;  // the results block on the graph's device, and its host copy
  Tensor partner, mix_dloss, mix_grad;  // set_label_mix: labels reversed, a seed, the partners' dLogits
};

TrainStep::TrainStep(graph::Graph& graph, const TrainStepOptions& options) : graph_(graph), options_(options) {
  if (!(options.label_smoothing >= 0 && options.label_smoothing < 1))
    throw ConfigError(str("label_smoothing must be in [0, 1), got ", options.label_smoothing));
  if (!(options.loss_scale > 0)) throw ConfigError(str("loss_scale must be > 0, got ", options.loss_scale));
}

TrainStep::~TrainStep() = default;

void TrainStep::fill_dloss(Heads& h) {
  for (size_t o = 0; o < graph_.num_outputs(); ++o) {
    const double v = options_.loss_scale * (o == 0 ? 1.0 : graph_.aux_loss_weight());
    if (h.dloss[o].device() == Device::kCpu) {
      h.dloss[o].fill(v);
      continue;
    }
    FASTNN_CHECK(options_.upload, "train step on ", device_name(h.dloss[o].device()), " needs TrainStepOptions::upload");
    Tensor host = Tensor::empty({1}, h.dloss[o].dtype());
    host.fill(v);
    options_.upload(host, h.dloss[o]);
  }
}

void TrainStep::set_loss_scale(double scale) {
  FASTNN_CHECK(scale > 0, "loss_scale must be > 0, got ", scale);
  if (scale == options_.loss_scale) return;
  options_.loss_scale = scale;
  if (heads_) fill_dloss(*heads_);
}

std::vector<std::pair<Tensor, double>> TrainStep::loss_gradient_seeds(const Tensor& labels) {
  Heads& h = heads(labels);
  std::vector<std::pair<Tensor, double>> out;
  for (size_t o = 0; o < graph_.num_outputs(); ++o) out.push_back({h.dloss[o], o == 0 ? 1.0 : graph_.aux_loss_weight()});
  return out;
}

TrainStep::Heads& TrainStep::heads(const Tensor& labels) {
  const int64_t n = graph_.batch_size(), k = graph_.num_classes();
  FASTNN_CHECK(labels.defined() && labels.shape() == Shape{n} &&
                   (labels.dtype() == DType::kI32 || labels.dtype() == DType::kI64),
               "train step: labels are ", labels.defined() ? labels.describe() : "undefined", ", expected i32 or i64 [",
               n, "]");
  if (heads_ && heads_->batch == n && heads_->label_dtype == labels.dtype()) return *heads_;
  auto h = std::make_unique<Heads>();
  h->batch = n;
  h->label_dtype = labels.dtype();
  const DType dt = graph_.dtype();
  const Device dev = labels.device();
  const ops::OpRegistry& reg = *graph_.plan().options().registry;
  const std::vector<ops::TensorSpec> in{{.name = "logits", .shape = {n, k}, .dtype = dt},
                                        {.name = "labels", .shape = {n}, .dtype = labels.dtype()}};
  ops::Attrs xent_attrs{{"label_smoothing", options_.label_smoothing}};
  if (!options_.class_weights.empty()) xent_attrs.set("class_weights", ops::Floats(options_.class_weights));
  h->xent = reg.create("softmax_xent", dev, xent_attrs, in);
  h->top1 = reg.create("top_k", dev, {{"k", int64_t{1}}}, in);
  h->top5 = reg.create("top_k", dev, {{"k", std::min<int64_t>(5, k)}}, in);
  h->block = Tensor::empty({static_cast<int64_t>(kBlockBytes)}, DType::kU8, dev);
  if (dev != Device::kCpu) {
    FASTNN_CHECK(options_.download, "train step on ", device_name(dev), " needs TrainStepOptions::download");
    h->host_block = Tensor::empty({static_cast<int64_t>(kBlockBytes)}, DType::kU8);
  }
  for (size_t o = 0; o < graph_.num_outputs(); ++o) {
    h->loss[o] = window(h->block, kLossOffset[o], dt);
    h->probs[o] = Tensor::empty({n, k}, dt, dev);
    h->dloss[o] = Tensor::empty({1}, dt, dev);
  }
  fill_dloss(*h);
  const size_t ws = std::max({h->xent->signature().workspace_bytes, h->top1->signature().workspace_bytes,
                              h->top5->signature().workspace_bytes});
  if (ws) h->workspace = Tensor::empty({static_cast<int64_t>(ws)}, DType::kU8, dev);
  h->correct1 = window(h->block, kTop1Offset, DType::kI64);
  h->correct5 = window(h->block, kTop5Offset, DType::kI64);
  heads_ = std::move(h);
  return *heads_;
}

StepResult TrainStep::read_results(bool aux) {
  Heads& h = *heads_;
  Tensor host = h.block;
  if (h.block.device() != Device::kCpu) {
    host = h.host_block;
    options_.download(h.block, host);  // the one device->host copy of the step
  }
  return decode(host, aux);
}

// The block's losses and counts; loss = main + aux_weight * aux (evaluate passes aux = false).
StepResult TrainStep::decode(const Tensor& host, bool aux) const {
  const DType dt = graph_.dtype();
  StepResult r;
  r.main_loss = window(host, kLossOffset[0], dt).to_vector<double>()[0];
  if (aux) r.aux_loss = window(host, kLossOffset[1], dt).to_vector<double>()[0];
  r.correct = window(host, kTop1Offset, DType::kI64).to_vector<int64_t>()[0];
  r.correct_top5 = window(host, kTop5Offset, DType::kI64).to_vector<int64_t>()[0];
  r.examples = graph_.batch_size();
  r.loss = r.main_loss + (aux ? graph_.aux_loss_weight() * r.aux_loss : 0.0);
  return r;
}

const Tensor& TrainStep::results_block() const {
  FASTNN_CHECK(heads_, "train step: results_block() before the first step");
  return heads_->block;
}

StepResult TrainStep::results_from(const Tensor& host_block) const {
  FASTNN_CHECK(host_block.device() == Device::kCpu && host_block.nbytes() == kBlockBytes,
               "train step: results_from() takes a host copy of results_block(), got ", host_block.describe());
  return decode(host_block, graph_.has_aux_logits());
}

void TrainStep::loss_forward(size_t output, const Tensor& labels) {
  Heads& h = *heads_;
  const Tensor in[2] = {graph_.output(output), labels};
  Tensor out[1] = {h.loss[output]};
  Tensor saved[1] = {h.probs[output]};
  ops::ForwardArgs a;
  a.inputs = in;
  a.outputs = out;
  a.saved = saved;
  a.workspace = h.workspace;
  a.training = true;
  h.xent->forward(a);
}

void TrainStep::counts(const Tensor& labels) {
  Heads& h = *heads_;
  const Tensor in[2] = {graph_.output(0), labels};
  for (auto [kernel, result] : {std::pair{h.top1.get(), &h.correct1}, std::pair{h.top5.get(), &h.correct5}}) {
    Tensor out[1] = {*result};
    ops::ForwardArgs a;
    a.inputs = in;
    a.outputs = out;
    a.workspace = h.workspace;
    kernel->forward(a);
  }
}

void TrainStep::loss_backward(size_t output, const Tensor& labels, const Tensor& dloss, const Tensor& d_logits) {
  Heads& h = *heads_;
  const Tensor in[2] = {graph_.output(output), labels};
  const Tensor outs[1] = {h.loss[output]};
  const Tensor saved[1] = {h.probs[output]};
  const Tensor dl[1] = {dloss};
  Tensor d_in[2] = {d_logits, Tensor()};
  ops::BackwardArgs b;
  b.inputs = in;
  b.outputs = outs;
  b.saved = saved;
  b.d_outputs = dl;
  b.d_inputs = d_in;
  b.workspace = h.workspace;
  b.training = true;
  h.xent->backward(b);
}

void TrainStep::set_label_mix(double own_weight) {
  FASTNN_CHECK(own_weight >= 0 && own_weight <= 1, "train step: a label mix weight is in [0, 1], got ", own_weight);
  mix_ = own_weight;
  sample_mix_.clear();
}

void TrainStep::set_label_mix(std::span<const double> own_weights) {
  if (own_weights.empty()) return set_label_mix(1.0);
  FASTNN_CHECK(static_cast<int64_t>(own_weights.size()) == graph_.batch_size(), "train step: ", own_weights.size(),
               " label mix weights for a batch of ", graph_.batch_size());
  for (double w : own_weights) FASTNN_CHECK(w >= 0 && w <= 1, "train step: a label mix weight is in [0, 1], got ", w);
  // One weight for all (timm's batch mode) keeps the one-weight arithmetic.
  if (std::all_of(own_weights.begin(), own_weights.end(), [&](double w) { return w == own_weights[0]; }))
    return set_label_mix(own_weights[0]);
  sample_mix_.assign(own_weights.begin(), own_weights.end());
}

namespace {
template <typename L>
void reverse_labels(const Tensor& labels, Tensor& out) {
  const L* y = labels.data<L>();
  L* r = out.data<L>();
  const int64_t n = labels.numel();
  for (int64_t i = 0; i < n; ++i) r[i] = y[n - 1 - i];
}
template <typename T>
void add_into(Tensor& sum, const Tensor& x) {
  T* s = sum.data<T>();
  const T* v = x.data<T>();
  for (int64_t i = 0; i < sum.numel(); ++i) s[i] += v[i];
}
// own[i, :] = w_i * own[i, :] + (1 - w_i) * partner[i, :], per row i of [N, K].
template <typename T>
void mix_rows(Tensor& own, const Tensor& partner, const std::vector<double>& w) {
  T* d = own.data<T>();
  const T* m = partner.data<T>();
  const int64_t k = own.shape()[1];
  for (size_t i = 0; i < w.size(); ++i)
    for (int64_t j = 0; j < k; ++j) {
      const size_t at = i * static_cast<size_t>(k) + static_cast<size_t>(j);
      d[at] = static_cast<T>(w[i] * static_cast<double>(d[at]) + (1 - w[i]) * static_cast<double>(m[at]));
    }
}
}  // namespace

// Per-sample weights (pair and elem modes): each row's gradient and loss term weighted by its own w_i.
// The row terms come from the CPU kernel's workspace, read right after each forward.
void TrainStep::per_sample_mixed_loss(size_t o, const Tensor& labels, double seed) {
  Heads& h = *heads_;
  const int64_t n = graph_.batch_size();
  const std::vector<double> own_rows = ops::softmax_xent_row_terms(h.workspace, n);
  h.mix_dloss.fill(seed);
  loss_backward(o, labels, h.mix_dloss, graph_.output_grad(o));
  loss_forward(o, h.partner);  // the same probabilities, the partners' loss terms
  const std::vector<double> partner_rows = ops::softmax_xent_row_terms(h.workspace, n);
  loss_backward(o, h.partner, h.mix_dloss, h.mix_grad);
  Tensor d_logits = graph_.output_grad(o);
  if (graph_.dtype() == DType::kF64) mix_rows<double>(d_logits, h.mix_grad, sample_mix_);
  else mix_rows<float>(d_logits, h.mix_grad, sample_mix_);
  double own = 0, partner = 0;
  for (size_t i = 0; i < sample_mix_.size(); ++i) {
    own += sample_mix_[i] * own_rows[i];
    partner += (1 - sample_mix_[i]) * partner_rows[i];
  }
  h.loss[o].fill(own / ops::softmax_xent_divisor(options_.class_weights, labels) +
                 partner / ops::softmax_xent_divisor(options_.class_weights, h.partner));
}

// The cross-entropy is linear in its targets, so the mixed loss is the two plain losses weighted, and its
// gradient the two gradients weighted: the softmax_xent kernel runs for each label set (timm's soft
// targets need no other kernel).
void TrainStep::mixed_loss(size_t o, const Tensor& labels) {
  Heads& h = *heads_;
  FASTNN_CHECK(labels.device() == Device::kCpu && graph_.output_grad(o).device() == Device::kCpu,
               "train step: mixup / CutMix labels are mixed on CPU graphs only, this one is on ",
               device_name(graph_.output_grad(o).device()));
  const DType dt = graph_.dtype();
  const int64_t n = graph_.batch_size();
  if (!h.partner.defined()) {
    h.partner = Tensor::empty({n}, labels.dtype());
    h.mix_dloss = Tensor::empty({1}, dt);
    h.mix_grad = Tensor::empty({n, graph_.num_classes()}, dt);
  }
  if (labels.dtype() == DType::kI32) reverse_labels<int32_t>(labels, h.partner);
  else reverse_labels<int64_t>(labels, h.partner);
  const double seed = options_.loss_scale * (o == 0 ? 1.0 : graph_.aux_loss_weight());
  if (!sample_mix_.empty()) return per_sample_mixed_loss(o, labels, seed);
  const double own_loss = h.loss[o].to_vector<double>()[0];
  h.mix_dloss.fill(seed * mix_);
  loss_backward(o, labels, h.mix_dloss, graph_.output_grad(o));
  loss_forward(o, h.partner);  // the same probabilities, the partners' loss
  const double partner_loss = h.loss[o].to_vector<double>()[0];
  h.mix_dloss.fill(seed * (1 - mix_));
  loss_backward(o, h.partner, h.mix_dloss, h.mix_grad);
  Tensor d_logits = graph_.output_grad(o);
  if (dt == DType::kF64) add_into<double>(d_logits, h.mix_grad);
  else add_into<float>(d_logits, h.mix_grad);
  h.loss[o].fill(mix_ * own_loss + (1 - mix_) * partner_loss);
}

void TrainStep::queue_train(const Tensor& images, const Tensor& labels, uint64_t step, uint64_t micro_batch) {
  Heads& h = heads(labels);
  graph_.forward(images, /*training=*/true, step, micro_batch);
  for (size_t o = 0; o < graph_.num_outputs(); ++o) {
    loss_forward(o, labels);
    // dLoss/dLogits (scaled by dloss: loss_scale, times the aux weight) straight into the output gradient.
    if (mix_ == 1 && sample_mix_.empty()) loss_backward(o, labels, h.dloss[o], graph_.output_grad(o));
    else mixed_loss(o, labels);
  }
  graph_.backward();
  counts(labels);  // before the read-back, so one copy brings losses and counts
}

StepResult TrainStep::train(const Tensor& images, const Tensor& labels, uint64_t step, uint64_t micro_batch) {
  queue_train(images, labels, step, micro_batch);
  return read_results(graph_.has_aux_logits());
}

StepResult TrainStep::loss(const Tensor& images, const Tensor& labels, uint64_t step) {
  heads(labels);
  graph_.forward(images, /*training=*/true, step);
  loss_forward(0, labels);
  if (graph_.has_aux_logits()) loss_forward(1, labels);
  counts(labels);
  return read_results(graph_.has_aux_logits());
}

StepResult TrainStep::evaluate(const Tensor& images, const Tensor& labels) {
  heads(labels);
  graph_.forward(images, /*training=*/false, 0);
  loss_forward(0, labels);
  counts(labels);
  return read_results(false);
}

}  // namespace fastnn
