// Data-parallel gradient averaging for the CUDA step runner (CUDA builds only): the trainable gradients
// grouped into buckets of about allreduce_bucket_mb in backward order (the last layers' first), each
// averaged by one collective call on a communication stream of its own as soon as backward has written
// all of its gradients, while backward goes on with the layers before.
//
//   GradientBuckets b(collectives, grads, owner, nodes, bucket_mb, head_gradient);
//   b.start_step();                    // before the step's backward
//   b.layer_done(node);                // from the graph's layer observer, after each node's backward
//   b.finish(compute_stream);          // before the update: every bucket averaged, the stream after them
//
// Every rank issues the buckets in the same order (a bucket whose layers backward skipped goes in
// finish()). Threading: the thread driving the runner.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>
#include <span>
#include <vector>

#include "trainer/runner/step_runner.h"
#include "trainer/tensor.h"

namespace fastnn::runner {

// A device tensor as the collectives take it.
DeviceCollectives::Buffer collective_buffer(const Tensor& t);

class GradientBuckets {
 public:
  // grads: the trainable parameters' gradients in the graph's parameters() order; owner[j]: the plan node
  // whose backward writes grads[j] (of `nodes` nodes). head_gradient: a replicated classifier head's
  // gradient, complete before backward starts, in a bucket of its own that launch_head() issues.
  // Creates the communication stream and its events.
  GradientBuckets(DeviceCollectives& collectives, std::span<const Tensor> grads, std::span<const size_t> owner,
                  size_t nodes, double bucket_mb, const Tensor* head_gradient);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  void start_step();
  void layer_done(size_t node);
  void launch_head();
  // Every bucket issued, waited for under the collectives' timeout, and `s` ordered after them.
  void finish(cudaStream_t s);

 private:
  struct Bucket {
    std::vector<DeviceCollectives::Buffer> buffers;
    size_t pending = 0;  // gradients the backward pass has still to write this step
    bool launched = false;
  };
  void launch(size_t b);

  DeviceCollectives& collectives_;
  std::vector<Bucket> buckets_;
  std::vector<std::vector<size_t>> node_buckets_;  // per plan node: the buckets its gradients are in
  std::optional<size_t> head_bucket_;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t grads_ready_ = nullptr, comm_done_ = nullptr;
};

}  // namespace fastnn::runner
