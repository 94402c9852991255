#include "trainer/runner/head_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "trainer/optim/gradient_ops.h"

namespace fastnn::runner {
namespace {

// A tensor over memory the head owns (it outlives the runner's use of the view).
class HeadStorage final : public Storage {
 public:
  HeadStorage(void* data, size_t bytes) {
    data_ = data;
    bytes_ = bytes;
  }
  Device device() const override { return Device::kCpu; }
};

std::vector<int64_t> labels_of(const Tensor& labels) {
  std::vector<int64_t> out(static_cast<size_t>(labels.numel()));
  if (labels.dtype() == DType::kI64) {
    std::copy_n(labels.data<int64_t>(), out.size(), out.begin());
  } else {
    const int32_t* l = labels.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = l[i];
  }
  return out;
}

}  // namespace

StepResult step_result(const head::HeadResult& h) {
  StepResult r;
  r.loss = r.main_loss = h.loss;
  r.correct = h.correct;
  r.correct_top5 = h.correct_top5;
  r.examples = h.examples;
  return r;
}

HeadStep::HeadStep(const head::HeadOptions& options, Communicator* comm, const OptimizerOptions& optimizer)
    : head_(options, options.sharded ? comm : nullptr), comm_(comm), sharded_(options.sharded),
      optimizer_options_(optimizer) {
  if (!sharded_) return;
  // On the PartialFC path the gradient buffer only holds the sampled rows: this optimizer is only
  // stepped there through step_rows(), with that compact buffer.
  ParamRef p{kHeadWeights, head_.weights().data(),
             head_.sampled_path() ? head_.weights().data() : head_.gradients().data(), head_.weights().size(), true};
  optimizer_ = make_optimizer(optimizer, {p});
}

HeadStep::~HeadStep() = default;

StepResult HeadStep::train(graph::Graph& graph, const Tensor& labels, uint64_t step) {
  labels_ = labels_of(labels);
  const Tensor& features = graph.output(0);
  FASTNN_CHECK(features.ndim() == 2 && features.dim(1) == head_.emb_dim(), "the head takes [N, ", head_.emb_dim(),
               "] embeddings, the net gives ", features.describe());
  for (size_t k = 1; k < graph.num_outputs(); ++k) {
    Tensor& g = graph.output_grad(k);
    std::memset(g.raw(), 0, g.nbytes());
  }
  return step_result(head_.train(features.data<float>(), labels_.data(), features.dim(0), step,
                                 graph.output_grad(0).data<float>()));
}

StepResult HeadStep::evaluate(graph::Graph& graph, const Tensor& labels) {
  labels_ = labels_of(labels);
  const Tensor& features = graph.output(0);
  const int64_t n = features.dim(0);
  return step_result(sharded_ ? head_.evaluate_shared(features.data<float>(), labels_.data(), n)
                              : head_.evaluate(features.data<float>(), labels_.data(), n));
}

ParamRef HeadStep::param() {
  FASTNN_CHECK(!sharded_, "a sharded head's rows are not a model parameter");
  return {kHeadWeights, head_.weights().data(), head_.gradients().data(), head_.weights().size(), true};
}

graph::NamedTensor HeadStep::variable() {
  const size_t bytes = head_.weights().size() * sizeof(float);
  Tensor w({head_.rows(), head_.emb_dim()}, DType::kF32, std::make_shared<HeadStorage>(head_.weights().data(), bytes));
  return {kHeadWeights, w, Tensor(), true};
}

void HeadStep::add_weight_decay(double weight_decay) {
  if (weight_decay <= 0) return;
  std::span<float> g = head_.gradients(), w = head_.weights();
  const int64_t d = head_.emb_dim();
  const std::vector<int64_t>& rows = head_.sampled_rows();
  for (size_t j = 0; j < g.size() / static_cast<size_t>(d); ++j) {
    const size_t row = head_.sampled_path() ? static_cast<size_t>(rows[j]) : j;
    for (int64_t k = 0; k < d; ++k)
      g[j * d + k] += static_cast<float>(weight_decay) * w[row * d + k];
  }
}

double HeadStep::norm_squared() {
  double ss = 0;
  for (float v : head_.gradients()) ss += static_cast<double>(v) * v;
  if (comm_) comm_->allreduce_sum(std::span<double>(&ss, 1));
  return ss;
}

void HeadStep::scale(float factor) {
  for (float& v : head_.gradients()) v *= factor;
}

void HeadStep::step(float lr) {
  if (!head_.sampled_path()) return optimizer_->step(lr);
  // Lazy PartialFC update: only the sampled rows and their slots change (the optimizer's own rule over
  // those rows, their gradients compact in the head's buffer); scalars (beta powers) advance once.
  optimizer_->step_rows(lr, head_.sampled_rows(), head_.emb_dim(), head_.gradients().data());
}

std::vector<checkpoint::RowShardSlice> HeadStep::row_slices() {
  const std::vector<int64_t> shape = {head_.options().num_classes, head_.emb_dim()};
  std::vector<checkpoint::RowShardSlice> out;
  out.push_back({kHeadWeights, shape, head_.row_begin(), head_.row_end(), head_.weights().data(), head_.weights().size(), false});
  for (const StateArray& a : optimizer_->state())
    if (a.count == head_.weights().size())
      out.push_back({a.name, shape, head_.row_begin(), head_.row_end(), a.data, a.count, true});
  return out;
}

std::vector<NamedArray> HeadStep::export_scalars() const {
  std::vector<NamedArray> out;
  for (NamedArray& a : optimizer_->export_state())
    if (a.data.size() != static_cast<size_t>(head_.rows() * head_.emb_dim())) out.push_back({std::string("Head/") + a.name, std::move(a.data)});
  return out;
}

void HeadStep::import_scalars(const std::vector<NamedArray>& arrays) {
  for (const StateArray& a : optimizer_->state()) {
    if (a.count == head_.weights().size()) continue;
    const std::string name = std::string("Head/") + a.name;
    auto it = std::find_if(arrays.begin(), arrays.end(), [&](const NamedArray& n) { return n.name == name; });
    if (it == arrays.end() || it->data.size() != a.count) throw FormatError(str("the checkpoint has no ", name));
    std::copy(it->data.begin(), it->data.end(), a.data);
  }
}

void HeadStep::load_rows(checkpoint::RowShardReader& reader, bool optimizer) {
  const checkpoint::RowShardedArrayLayout& w = reader.at(kHeadWeights);
  if (w.global_shape.size() != 2 || w.global_shape[0] != head_.options().num_classes || w.global_shape[1] != head_.emb_dim())
    throw FormatError(str(kHeadWeights, " in the checkpoint is not [", head_.options().num_classes, ", ", head_.emb_dim(), "]"));
  reader.read_rows(kHeadWeights, head_.row_begin(), head_.row_end(), head_.weights().data(), head_.weights().size());
  if (!optimizer) return;
  for (const StateArray& a : optimizer_->state())
    if (a.count == head_.weights().size()) reader.read_rows(a.name, head_.row_begin(), head_.row_end(), a.data, a.count);
}

}  // namespace fastnn::runner
