// The classifier head (classifier_head.h) on the GPU: the same model and the same formulas as
// ClassifierHead<float>, its loss, gradients and top-1/top-5 computed on the device. CUDA builds only
// (classifier_head_cuda.cu: kernels and glue in one file).
//
//   CudaClassifierHead h(options, collectives);            // null collectives: one process
//   h.train(emb, DType::kF16, labels, DType::kI32, n, step, d_emb, DType::kF16, loss_scale, stream);
//   HeadResult r = h.results(stream);                       // waits; Error for a label outside [0, K)
//   ... h.gradients() holds dLoss/dW of this rank's rows (PartialFC: of sampled_rows_device()) ...
//
// As ClassifierHead<float> (read its header for the contract): rank r of a sharded head holds classes
// class_range(K, W, r) with the same initial weights (head_math.h: any world size, either device); every
// rank's features and labels are all-gathered; the softmax normaliser of a row comes from an allreduce-max
// and an allreduce-sum of N values each; the feature gradient returns by reduce-scatter, times W; the
// margin transform is margin.h's target_logit; the softmax, its normaliser and every sum are double;
// top-1/top-5 from per-rank top-5 lists merged (head_math.h). GEMMs through cuBLAS (cuda/blas.h: f32,
// TF32 only when the policy allows it), so results agree with the CPU's to f32 rounding, not bitwise.
//
// What differs from the CPU head:
// - Precision: the embedding and its gradient are in `dtype` (the backbone's f32, f16 or bf16), converted
//   to f32 on entry and rounded back on exit; the weights, their gradient, the logits and the margin are
//   f32 whatever the backbone computes in (sums in double).
// - grad_scale (a device double, e.g. the loss scaler's scale; null: 1) multiplies dLoss/dlogits, so the
//   weight and feature gradients carry the loss scale the backbone's backward carries.
// - Collectives: a sharded head given `comm` runs every collective even in a world of one (NCCL then
//   copies), so one GPU exercises the sharded path. Every rank must bring the same n (the runner's
//   batch size is the same on every rank); unlike the CPU head the sizes are not compared first.
// - A label outside [0, K) is reported by results() (the CPU head throws before computing), on every rank
//   alike (each sees the global batch); nothing is indexed out of range meanwhile.
// - PartialFC (training with sample_ratio < 1 or force_sampled_path): the sample is drawn on the host by
//   sample_local_rows from the global batch's labels, copied back once per step (one wait inside
//   train()); the used rows are gathered into a compact copy as on the CPU.
//
// Memory: the weights (and the full path's gradient) are allocated at construction; every other buffer
// grows to the largest step seen and is kept (cuda::Workspace), so PartialFC's varying sample sizes do
// not reallocate each step. A step's logits [global batch, columns] must stay below 2^31 elements (one
// matrix for cuBLAS, not split into blocks): train()/evaluate() throw Error otherwise (head_memory.h's
// check_device_logits, which says what to change). Calls are ordered on `stream`, on the current device;
// not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/cuda/runtime.h"
#include "trainer/head/classifier_head.h"
#include "trainer/head/head_collectives.h"
#include "trainer/tensor.h"

namespace fastnn::head {

class CudaClassifierHead {
 public:
  // comm: the world's device collectives (null: one process, or a head that is not sharded); must
  // outlive the head. Initialises the weights on the current stream.
  CudaClassifierHead(const HeadOptions& options, HeadCollectives* comm);
  ~CudaClassifierHead();
  CudaClassifierHead(const CudaClassifierHead&) = delete;
  CudaClassifierHead& operator=(const CudaClassifierHead&) = delete;

  int64_t row_begin() const { return row_begin_; }
  int64_t row_end() const { return row_end_; }
  int64_t rows() const { return row_end_ - row_begin_; }
  int64_t emb_dim() const { return o_.emb_dim; }
  const HeadOptions& options() const { return o_; }
  bool sampled_path() const { return o_.sample_ratio < 1.0 || o_.force_sampled_path; }

  // This rank's rows [rows, emb_dim] f32, device memory (in place for the head's life), and a tensor over them.
  float* weights() { return weights_.data<float>(); }
  Tensor weights_tensor() const { return Tensor({rows(), emb_dim()}, DType::kF32, weights_.storage()); }
  // dLoss/dW after train(): [rows, emb_dim], or [sampled_count(), emb_dim] on the PartialFC path (device;
  // the full path's buffer stays in place, the sampled one until the next call).
  float* gradients() { return grads_; }
  // The full path's gradient buffer as a tensor ([rows * emb_dim] f32; undefined on the PartialFC path).
  Tensor full_gradients_tensor() const { return full_grads_; }
  // PartialFC: the last train()'s sampled local rows (ascending), on the host and on the device.
  const std::vector<int64_t>& sampled_rows() const { return sampled_; }
  const int64_t* sampled_rows_device() const { return sampled_device_; }
  int64_t sampled_count() const { return static_cast<int64_t>(sampled_.size()); }

  // features [n, emb_dim] of `dtype` and labels [n] (i32 or i64) of this rank's samples, device memory;
  // writes dLoss/dfeatures [n, emb_dim] of `grad_dtype` (times *grad_scale). Queued on `stream`.
  void train(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n, uint64_t step,
             void* dfeatures, DType grad_dtype, const double* grad_scale, cudaStream_t stream);
  // The loss (with the margin) and top-1/top-5 without gradients; evaluate_shared: a batch every rank
  // holds alike (nothing gathered, the whole batch's counts on every rank), as the CPU head's.
  void evaluate(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n,
                cudaStream_t stream);
  void evaluate_shared(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n,
                       cudaStream_t stream);
  // The last call's results: waits for `stream` (under the collective timeout when sharded). Error naming
  // the sample and the label when a label was outside [0, num_classes).
  HeadResult results(cudaStream_t stream);

 private:
  struct Scratch;
  void run(const void* features, DType dtype, const void* labels, DType label_dtype, int64_t n, uint64_t step,
           void* dfeatures, DType grad_dtype, const double* grad_scale, bool shared, cudaStream_t s);
  bool collective() const { return o_.sharded && comm_ != nullptr; }

  HeadOptions o_;
  HeadCollectives* comm_;
  int world_ = 1, rank_ = 0;
  int64_t row_begin_ = 0, row_end_ = 0;
  Tensor weights_, full_grads_, results_;
  float* grads_ = nullptr;
  std::vector<int64_t> sampled_;
  const int64_t* sampled_device_ = nullptr;
  std::unique_ptr<Scratch> scratch_;
  // The last call's batch, for results(): rows in the loss's batch, this rank's, its global labels.
  int64_t last_batch_ = 0, last_local_ = 0;
  const int64_t* last_labels_ = nullptr;
};

}  // namespace fastnn::head
