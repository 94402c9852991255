#include "trainer/train_step.h"

#include <algorithm>

#include "core/check.h"

namespace fastnn {

// The loss and metric kernels with their buffers, for one batch size and label dtype.
struct TrainStep::Heads {
  int64_t batch = 0;
  DType label_dtype = DType::kI64;
  std::unique_ptr<ops::OpKernel> xent, top1, top5;
  // Per output (logits, aux): loss [1], probs [N, K], dloss [1] (1, or the aux weight).
  Tensor loss[2], probs[2], dloss[2];
  Tensor workspace, correct1, correct5;
};

TrainStep::TrainStep(graph::Graph& graph, const TrainStepOptions& options) : graph_(graph), options_(options) {
  if (!(options.label_smoothing >= 0 && options.label_smoothing < 1))
    throw ConfigError(str("label_smoothing must be in [0, 1), got ", options.label_smoothing));
}

TrainStep::~TrainStep() = default;

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
  h->xent = reg.create("softmax_xent", dev, {{"label_smoothing", options_.label_smoothing}}, in);
  h->top1 = reg.create("top_k", dev, {{"k", int64_t{1}}}, in);
  h->top5 = reg.create("top_k", dev, {{"k", std::min<int64_t>(5, k)}}, in);
  for (size_t o = 0; o < graph_.num_outputs(); ++o) {
    h->loss[o] = Tensor::empty({1}, dt, dev);
    h->probs[o] = Tensor::empty({n, k}, dt, dev);
    h->dloss[o] = Tensor::empty({1}, dt, dev);
    h->dloss[o].fill(o == 0 ? 1.0 : graph_.aux_loss_weight());
  }
  const size_t ws = std::max({h->xent->signature().workspace_bytes, h->top1->signature().workspace_bytes,
                              h->top5->signature().workspace_bytes});
  if (ws) h->workspace = Tensor::empty({static_cast<int64_t>(ws)}, DType::kU8, dev);
  h->correct1 = Tensor::empty({1}, DType::kI64, dev);
  h->correct5 = Tensor::empty({1}, DType::kI64, dev);
  heads_ = std::move(h);
  return *heads_;
}

double TrainStep::loss_forward(size_t output, const Tensor& labels) {
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
  return h.loss[output].to_vector<double>()[0];
}

void TrainStep::counts(const Tensor& labels, StepResult& r) {
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
  r.correct = h.correct1.to_vector<int64_t>()[0];
  r.correct_top5 = h.correct5.to_vector<int64_t>()[0];
  r.examples = graph_.batch_size();
}

StepResult TrainStep::train(const Tensor& images, const Tensor& labels, uint64_t step) {
  Heads& h = heads(labels);
  graph_.forward(images, /*training=*/true, step);
  StepResult r;
  for (size_t o = 0; o < graph_.num_outputs(); ++o) {
    const double l = loss_forward(o, labels);
    (o == 0 ? r.main_loss : r.aux_loss) = l;
    // dLoss/dLogits (scaled by dloss: 1, or the aux weight) straight into the graph's output gradient.
    const Tensor in[2] = {graph_.output(o), labels};
    const Tensor outs[1] = {h.loss[o]};
    const Tensor saved[1] = {h.probs[o]};
    const Tensor dl[1] = {h.dloss[o]};
    Tensor d_in[2] = {graph_.output_grad(o), Tensor()};
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
  r.loss = r.main_loss + (graph_.has_aux_logits() ? graph_.aux_loss_weight() * r.aux_loss : 0.0);
  graph_.backward();
  counts(labels, r);
  return r;
}

StepResult TrainStep::loss(const Tensor& images, const Tensor& labels, uint64_t step) {
  heads(labels);
  graph_.forward(images, /*training=*/true, step);
  StepResult r;
  r.main_loss = loss_forward(0, labels);
  if (graph_.has_aux_logits()) r.aux_loss = loss_forward(1, labels);
  r.loss = r.main_loss + (graph_.has_aux_logits() ? graph_.aux_loss_weight() * r.aux_loss : 0.0);
  counts(labels, r);
  return r;
}

StepResult TrainStep::evaluate(const Tensor& images, const Tensor& labels) {
  heads(labels);
  graph_.forward(images, /*training=*/false, 0);
  StepResult r;
  r.main_loss = r.loss = loss_forward(0, labels);
  counts(labels, r);
  return r;
}

}  // namespace fastnn
