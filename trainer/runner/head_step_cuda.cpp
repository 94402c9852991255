#include "trainer/runner/head_step_cuda.h"

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/runner/head_step.h"

namespace fastnn::runner {
namespace {

const Tensor& embedding_of(graph::Graph& g, int64_t emb_dim) {
  const Tensor& f = g.output(0);
  FASTNN_CHECK(f.ndim() == 2 && f.dim(1) == emb_dim, "the head takes [N, ", emb_dim, "] embeddings, the net gives ",
               f.describe());
  return f;
}

void check_labels_on_device(const Tensor& labels, int64_t n) {
  FASTNN_CHECK(labels.device() == Device::kCuda && labels.numel() == n, "the device head takes [", n,
               "] labels on the device, got ", labels.describe());
}

// Host copies on the current stream, waited for. Not cudaMemcpy: that runs on the legacy default stream,
// which is not ordered with fastnn's non-blocking streams, and from pageable memory it may return before
// the device has the bytes, so the next step's kernels could read the rows before they land (the head
// race found on an H200 on 2026-11-27, in the tests' copies).
std::vector<float> download(const float* device, size_t count) {
  std::vector<float> host(count);
  const cudaStream_t s = cuda::current_stream();
  if (count > 0) CUDA_CHECK(cudaMemcpyAsync(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return host;
}

void upload(const std::vector<float>& host, float* device) {
  const cudaStream_t s = cuda::current_stream();
  if (!host.empty())
    CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));  // `host` is pageable and dies with the caller's temporary
}

}  // namespace

HeadStepCuda::HeadStepCuda(const head::HeadOptions& options, head::HeadCollectives* comm, const OptimizerOptions& o)
    : head_(options, options.sharded ? comm : nullptr), comm_(comm), sharded_(options.sharded), optimizer_(o.optimizer) {
  if (sharded_) rows_ = std::make_unique<DeviceRowOptimizer>(o, kHeadWeights, head_.weights(), head_.rows(), head_.emb_dim());
}

void HeadStepCuda::queue_train(graph::Graph& g, const Tensor& labels, uint64_t step, const double* loss_scale) {
  host_rows_ = {};  // the last checkpoint's host copies of the rows (gigabytes at scale) are not kept
  const Tensor& f = embedding_of(g, head_.emb_dim());
  check_labels_on_device(labels, f.dim(0));
  cudaStream_t s = cuda::current_stream();
  for (size_t k = 1; k < g.num_outputs(); ++k) cuda::fill_bytes(g.output_grad(k), 0, s);  // unused by the head
  Tensor& df = g.output_grad(0);
  head_.train(f.raw(), f.dtype(), labels.raw(), labels.dtype(), f.dim(0), step, df.raw(), df.dtype(), loss_scale, s);
}

StepResult HeadStepCuda::read_results() { return step_result(head_.results(cuda::current_stream())); }

StepResult HeadStepCuda::evaluate(graph::Graph& g, const Tensor& labels) {
  const Tensor& f = embedding_of(g, head_.emb_dim());
  check_labels_on_device(labels, f.dim(0));
  cudaStream_t s = cuda::current_stream();
  if (sharded_) head_.evaluate_shared(f.raw(), f.dtype(), labels.raw(), labels.dtype(), f.dim(0), s);
  else head_.evaluate(f.raw(), f.dtype(), labels.raw(), labels.dtype(), f.dim(0), s);
  return read_results();
}

DeviceParam HeadStepCuda::param(float weight_decay) {
  FASTNN_CHECK(!sharded_, "a sharded head's rows are not a model parameter");
  // f32 weights and gradient under any compute dtype: prepare() unscales the gradient (it carries the
  // loss scale) and adds the decay in place; no compute-dtype copy to refresh.
  return {.name = kHeadWeights, .master = head_.weights(), .grad = head_.gradients(),
          .count = head_.rows() * head_.emb_dim(), .decay = true, .source = head_.gradients(), .value = nullptr,
          .weight_decay = weight_decay, .dtype = DType::kF32};
}

graph::NamedTensor HeadStepCuda::variable() { return {kHeadWeights, head_.weights_tensor(), Tensor(), true}; }

Tensor HeadStepCuda::gradient() {
  FASTNN_CHECK(!sharded_, "a sharded head's gradient is never averaged");
  return head_.full_gradients_tensor();
}

const int64_t* HeadStepCuda::selected() const { return head_.sampled_path() ? head_.sampled_rows_device() : nullptr; }
int64_t HeadStepCuda::selected_count() const { return head_.sampled_path() ? head_.sampled_count() : head_.rows(); }

void HeadStepCuda::prepare(float weight_decay, bool stats, const void* control, cudaStream_t s) {
  rows_->prepare(selected(), selected_count(), head_.gradients(), weight_decay, stats, control, s);
  // The decision must be the same on every rank: the rows' totals summed over the world.
  if (stats && comm_) comm_->allreduce_sum(rows_->totals(), 2, DType::kF64, s);
}

void HeadStepCuda::apply(const void* control, cudaStream_t s) {
  rows_->apply(selected(), selected_count(), head_.gradients(), control, s);
}

std::vector<checkpoint::RowShardSlice> HeadStepCuda::row_layout() const {
  FASTNN_CHECK(sharded_, "a replicated head is a variable, not row shards");
  const std::vector<int64_t> shape = {head_.options().num_classes, head_.emb_dim()};
  const size_t count = static_cast<size_t>(head_.rows() * head_.emb_dim());
  std::vector<checkpoint::RowShardSlice> out;
  out.push_back({kHeadWeights, shape, head_.row_begin(), head_.row_end(), nullptr, count, false});
  for (const DeviceRowOptimizer::Slot& slot : rows_->slots())
    out.push_back({slot.name, shape, head_.row_begin(), head_.row_end(), nullptr, count, true});
  return out;
}

std::vector<checkpoint::RowShardSlice> HeadStepCuda::row_slices() {
  std::vector<checkpoint::RowShardSlice> out = row_layout();
  CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream()));
  host_rows_.clear();
  host_rows_.push_back(download(head_.weights(), out[0].count));
  for (const DeviceRowOptimizer::Slot& slot : rows_->slots()) host_rows_.push_back(download(slot.data.data<float>(), out[0].count));
  for (size_t i = 0; i < out.size(); ++i) out[i].data = host_rows_[i].data();
  return out;
}

std::vector<NamedArray> HeadStepCuda::export_scalars(const std::vector<NamedArray>& backbone_state) const {
  std::vector<NamedArray> out;
  for (const NamedArray& a : backbone_state)
    if (a.name.starts_with(optimizer_ + "/")) out.push_back({std::string("Head/") + a.name, a.data});
  return out;
}

void HeadStepCuda::load_rows(checkpoint::RowShardReader& reader, bool optimizer) {
  host_rows_ = {};  // an earlier row_slices()' copies: stale once the rows are loaded, and gigabytes at scale
  const checkpoint::RowShardedArrayLayout& w = reader.at(kHeadWeights);
  if (w.global_shape.size() != 2 || w.global_shape[0] != head_.options().num_classes || w.global_shape[1] != head_.emb_dim())
    throw FormatError(str(kHeadWeights, " in the checkpoint is not [", head_.options().num_classes, ", ", head_.emb_dim(), "]"));
  CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream()));
  const int64_t b = head_.row_begin(), e = head_.row_end();
  upload(reader.read_rows(kHeadWeights, b, e), head_.weights());
  if (!optimizer) return;
  for (const DeviceRowOptimizer::Slot& slot : rows_->slots()) {
    Tensor dst = slot.data;
    upload(reader.read_rows(slot.name, b, e), dst.data<float>());
  }
}

}  // namespace fastnn::runner
