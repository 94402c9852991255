// Data-parallel gradient buckets (gradient_buckets_cuda.h).
#include "trainer/runner/gradient_buckets_cuda.h"

#include <algorithm>

#include "core/check.h"
#include "trainer/cuda/runtime.h"

namespace fastnn::runner {

DeviceCollectives::Buffer collective_buffer(const Tensor& t) {
  return {const_cast<void*>(t.raw()), static_cast<size_t>(t.numel()), t.dtype()};
}

GradientBuckets::GradientBuckets(DeviceCollectives& collectives, std::span<const Tensor> grads,
                                 std::span<const size_t> owner, size_t nodes, double bucket_mb,
                                 const Tensor* head_gradient)
    : collectives_(collectives) {
  FASTNN_CHECK(owner.size() == grads.size(), "cuda step: ", owner.size(), " trainable parameters in the plan, ",
               grads.size(), " in the graph");
  node_buckets_.assign(nodes, {});
  const auto cap = static_cast<size_t>(std::max(1.0, bucket_mb * 1024 * 1024));
  size_t bytes = 0;
  for (size_t j = grads.size(); j-- > 0;) {  // backward writes the last layers' gradients first
    const Tensor& g = grads[j];
    if (buckets_.empty() || (bytes + g.nbytes() > cap && !buckets_.back().buffers.empty())) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().buffers.push_back(collective_buffer(g));
    bytes += g.nbytes();
    node_buckets_[owner[j]].push_back(buckets_.size() - 1);
  }
  if (head_gradient) {
    head_bucket_ = buckets_.size();
    buckets_.push_back({{collective_buffer(*head_gradient)}, 1, false});
  }
  CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&grads_ready_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
}

GradientBuckets::~GradientBuckets() {
  if (comm_stream_) {
    cudaStreamSynchronize(comm_stream_);
    cudaStreamDestroy(comm_stream_);
  }
  if (grads_ready_) cudaEventDestroy(grads_ready_);
  if (comm_done_) cudaEventDestroy(comm_done_);
}

void GradientBuckets::start_step() {
  for (Bucket& b : buckets_) {
    b.pending = b.buffers.size();
    b.launched = false;
  }
}

void GradientBuckets::layer_done(size_t node) {
  for (size_t b : node_buckets_[node])
    if (--buckets_[b].pending == 0) launch(b);
}

void GradientBuckets::launch_head() {
  if (head_bucket_) launch(*head_bucket_);
}

// The bucket's gradients are written by work already queued on the compute stream: the communication
// stream waits for that point, then averages them while backward goes on.
void GradientBuckets::launch(size_t b) {
  CUDA_CHECK(cudaEventRecord(grads_ready_, cuda::current_stream()));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, grads_ready_, 0));
  collectives_.average_async(buckets_[b].buffers, comm_stream_);
  buckets_[b].launched = true;
}

void GradientBuckets::finish(cudaStream_t s) {
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (!buckets_[b].launched) launch(b);
  collectives_.wait(comm_stream_);
  CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_));
  CUDA_CHECK(cudaStreamWaitEvent(s, comm_done_, 0));
}

}  // namespace fastnn::runner
