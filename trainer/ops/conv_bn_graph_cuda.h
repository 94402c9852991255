// Convolution + batch-norm fusions through cuDNN's graph API (issue 13, P7; the plan is
// docs/CUDNN_FUSIONS.md). CUDA builds only. kFpropStats runs in training under `--fuse_conv_bn`
// (Conv2dCuda::channel_sums_workspace in conv2d_cuda.cpp); the others are not wired in yet. The gpu test
// conv_bn_graph_cuda_gpu_test holds each graph to a double-precision reference, records whether cuDNN
// has an engine for it on the GPU at hand and times it against the plain convolution.
//
// The graphs, all fp16 channels-last with f32 accumulation and f32 statistics:
//   kFpropStats               y = conv(x, w); sum[k] = Σ y, sqsum[k] = Σ y² over N, P, Q
//                             (the batch norm after the convolution needs no statistics pass)
//   kScaleBiasReluFpropStats  the same on relu(x · scale[c] + bias[c]): the previous batch norm's
//                             apply + relu done in the convolution's prologue (never written)
//   kScaleBiasReluWgrad       dw = wgrad(relu(x · scale + bias), dy): the weight gradient of that
//                             convolution, recomputing its input instead of reading it
//   kDgradDreluBnWeight       the backward of batch norm + relu + conv: g = dgrad(dy, w); the relu's
//                             gradient drelu = g where (x − mean) · invstd · scale + bias > 0 (the batch
//                             norm's output recomputed from its input x), written; and the batch norm's
//                             dscale = Σ drelu · x̂, dbias = Σ drelu and the coefficients of
//                             dx = eq_dy · drelu + eq_x · x + eq_bias (a pointwise pass then makes dx)
//
//   auto plan = ConvBnPlan::build(pb, ConvBnGraph::kFpropStats, choice, &why);  // null: no engine
//   plan->execute(handle, {.x = x, .w = w, .y = y, .sum = sum, .sqsum = sqsum}, workspace);
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "trainer/ops/conv2d_graph_cuda.h"

namespace fastnn::ops::cudnn_graph {

enum class ConvBnGraph { kFpropStats, kScaleBiasReluFpropStats, kScaleBiasReluWgrad, kDgradDreluBnWeight };

const char* graph_name(ConvBnGraph g);
bool has_prologue(ConvBnGraph g);

// Device pointers, each 16-byte aligned. x [N, C, H, W] channels-last; w [K, R, S, C], read by the
// forward graphs and the dgrad graph and written by wgrad; y [N, P, Q, K], written by the forward graphs,
// read (as dy) by the backward ones; scale, bias [C]: the io type in the prologue graphs, f32 (the batch
// norm's gamma and beta) in the dgrad graph; sum, sqsum [K] f32 (forward graphs). The dgrad graph's own:
// mean, invstd [C] f32 (the batch norm's saved statistics), drelu [N, C, H, W] channels-last in the io
// type, and dscale, dbias, eq_dy, eq_x, eq_bias [C] f32.
struct ConvBnTensors {
  const void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  float* sum = nullptr;
  float* sqsum = nullptr;
  const float* mean = nullptr;
  const float* invstd = nullptr;
  void* drelu = nullptr;
  float* dscale = nullptr;
  float* dbias = nullptr;
  float* eq_dy = nullptr;
  float* eq_x = nullptr;
  float* eq_bias = nullptr;
};

class ConvBnPlan {
 public:
  enum class MeanForm;  // how the dgrad graph subtracts the mean (defined in conv_bn_graph_cuda.cpp)
  // pb: channels-last, f16 or bf16, one group (cuDNN's guide lists the pre-compiled engines for f16
  // only: bf16 gets a runtime-compiled engine or none). Null when cuDNN refuses the graph or has no usable
  // engine for it; *why then says which and lists each candidate's reason. Builds on the current
  // stream's cuDNN handle (a trial run on zeroed scratch there). The dgrad graph tries the mean
  // subtracted as ADD with alpha2 = −1 (cuDNN's guide), then as SUB (its samples); description() says which.
  static std::shared_ptr<const ConvBnPlan> build(const ConvProblem& pb, ConvBnGraph graph, const EngineChoice& choice,
                                                 std::string* why);
  ~ConvBnPlan();
  ConvBnPlan(const ConvBnPlan&) = delete;
  ConvBnPlan& operator=(const ConvBnPlan&) = delete;

  ConvBnGraph graph() const { return graph_; }
  size_t workspace_bytes() const { return workspace_; }
  const std::string& description() const { return description_; }  // engine, notes, workspace
  void execute(cudnnHandle_t h, const ConvBnTensors& t, void* workspace) const;

 private:
  struct Descriptors;
  ConvBnPlan();
  static std::shared_ptr<ConvBnPlan> build_form(const ConvProblem& pb, ConvBnGraph graph,
                                                const EngineChoice& choice, MeanForm form, std::string* why);
  std::unique_ptr<Descriptors> d_;
  ConvBnGraph graph_ = ConvBnGraph::kFpropStats;
  size_t workspace_ = 0;
  std::string description_;
};

}  // namespace fastnn::ops::cudnn_graph
