// conv2d's three passes through cuDNN's graph (backend) API instead of its legacy convolution calls
// (conv_api=graph; CUDA builds only, used by conv2d_cuda.cpp).
//
// Why: cuDNN 9's legacy calls (cudnnConvolutionForward and the Get/Find algorithm lists) reach a fixed set
// of engines. The graph API's heuristics also reach the engines PyTorch's convolutions run on an H100/H200
// (the H200 profile of 2026-11-27: `sm90_xmma_*_implicit_gemm_*_warpgroupsize*`), and fastnn's convolutions took
// 17.1 ms of a ResNet-50 step where PyTorch's took 8.6 (docs/PERFORMANCE.md, "GPU training").
//
//   ConvProblem pb{...};                            // the convolution as cuDNN sees it (staged x, Cp)
//   auto plan = ConvPlan::build(pb, ConvPass::kForward, 0.0f, choice, &why);   // null: no usable engine
//   plan->execute(handle, x, w, y, workspace);     // workspace_bytes() of device memory
//
// One plan is one operation graph with one convolution node, built once per layer shape (conv2d_cuda.cpp
// caches them per thread: cuDNN does not promise that one plan may run on two threads at once). Engines
// come from heuristics mode A, then the fallback list; an engine is skipped when its numerical notes say
// non-deterministic (under Policy::deterministic), inputs converted down, or TF32 on f32 data that may
// not use it (PyTorch's filter); when its plan does not finalize or needs more
// workspace than the policy's cap; or when it fails a trial run on zeroed scratch tensors (a plan can
// finalize and still fail to execute). The first usable engine is kept, or with choice.exhaustive the
// fastest of the first kMaxTimedCandidates usable ones, timed as PyTorch's cudnn.benchmark does.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fastnn::ops::cudnn_graph {

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

// x [N, C, H, W] (the input cuDNN sees: staged when padded), w [K, C/groups, R, S], y [N, K, P, Q];
// nhwc: x and y channels-last and w [K, R, S, C/groups] in memory. Symmetric padding pad_h x pad_w.
struct ConvProblem {
  cudnnDataType_t io = CUDNN_DATA_FLOAT;
  bool nhwc = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t k = 0, groups = 1, r = 0, s = 0;
  int64_t p = 0, q = 0;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
};

struct EngineChoice {
  bool allow_tensor_cores_on_f32 = false;  // TF32 allowed
  bool deterministic = false;
  size_t max_workspace = 0;
  bool exhaustive = false;  // time the candidates instead of taking heuristics' first
};

// The most candidates timed by an exhaustive choice (cuDNN lists dozens; the good ones come first).
constexpr int kMaxTimedCandidates = 8;

class ConvPlan {
 public:
  // The best usable engine for `pass` with output scaling beta (bwd data: 1 adds into dx). Null when no
  // engine qualifies; *why then lists what each candidate failed on. Builds on the current device's
  // cuDNN handle (cuda::cudnn_handle of the current stream); exhaustive timing runs on that stream.
  static std::shared_ptr<const ConvPlan> build(const ConvProblem& pb, ConvPass pass, float beta,
                                               const EngineChoice& choice, std::string* why);
  ~ConvPlan();
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;

  size_t workspace_bytes() const { return workspace_; }
  // The engine's global index and the candidates considered (for logs).
  const std::string& description() const { return description_; }
  // The pass's three tensors by role: forward (x, w, y), backward data (dx, w, dy), backward filter
  // (x, dw, dy). Device pointers, 16-byte aligned (Error otherwise); ordered on the handle's stream.
  void execute(cudnnHandle_t h, const void* x, const void* w, const void* y, void* workspace) const;

 private:
  struct Descriptors;
  ConvPlan();
  std::unique_ptr<Descriptors> d_;
  size_t workspace_ = 0;
  std::string description_;
};

}  // namespace fastnn::ops::cudnn_graph
