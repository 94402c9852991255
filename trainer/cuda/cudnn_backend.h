// cuDNN's graph (backend) API as fastnn uses it: owned descriptors, tensor and node builders, and the
// engine search every graph shares. Written against cuDNN 9's C backend calls (cudnn_graph.h);
// docs/ARCHITECTURE.md says why not cudnn-frontend. CUDA builds only.
//
// Used by conv2d's plain graphs (ops/conv2d_graph_cuda.h) and the conv + batch-norm fusions
// (ops/conv_bn_graph_cuda.h):
//
//   auto x = tensor(1, CUDNN_DATA_HALF, {n, c, h, w}, /*channels_last=*/true);
//   auto op = ...;                                              // nodes that refer to the tensors
//   auto g = operation_graph(handle, {op.get(), ...}, &why);   // null: cuDNN refused the graph
//   std::vector<Plan> plans = usable_plans(handle, *g, rules, 1, trial, &why);  // empty: none usable
//   execute(handle, *plans[0].plan, uids, pointers, workspace);
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fastnn::cuda::cudnn_backend {

// Every tensor a graph reads or writes is 16-byte aligned (cuDNN's vectorised engines need it; the
// execute call checks).
constexpr int64_t kAlignment = 16;

// cuDNN's name for a failed status and, where cuDNN left one, its message saying why (which attribute
// or engine constraint): the text of every refusal logged from here.
std::string refusal(cudnnStatus_t st);

// One owned backend descriptor.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type);
  ~Desc();
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

  template <typename V>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const V& value) {
    return set_raw(name, type, 1, &value);
  }
  Desc& set_i64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v);
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& other);
  Desc& set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values);
  void finalize();  // throws Error with cuDNN's message
  cudnnStatus_t try_finalize();
  // Keeps a descriptor this one refers to alive as long as this one (cudnn-frontend does the same:
  // cuDNN does not promise to copy what an attribute points to).
  void adopt(std::unique_ptr<Desc> child) { children_.push_back(std::move(child)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  std::vector<std::unique_ptr<Desc>> children_;
};
using DescPtr = std::unique_ptr<Desc>;

// dims {N, C, H, W}: strides of a packed tensor, channels-first or channels-last.
std::vector<int64_t> packed_strides(const std::vector<int64_t>& nchw, bool channels_last);

// A tensor of the graph: dims {N, C, H, W}, packed; a virtual one lives only inside the fused kernel.
DescPtr tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& nchw, bool channels_last,
               bool is_virtual = false);

// A 2-D cross-correlation with f32 accumulation and symmetric padding.
DescPtr convolution(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dil_h, int64_t dil_w);

// A convolution node on its three tensors by role: forward (x, w, y), backward data (dx, w, dy),
// backward filter (x, dw, dy); the output is alpha · result + beta · output (beta = 1 adds into it).
// Null with *why set when cuDNN refuses it.
enum class ConvNode { kForward, kBackwardData, kBackwardFilter };
DescPtr convolution_node(ConvNode kind, const Desc& x, const Desc& w, const Desc& y, const Desc& conv, float beta,
                         std::string* why);

// Owns the descriptors of a graph under construction and hands out stable pointers to them.
class DescKeeper {
 public:
  const Desc* own(DescPtr d) {  // null stays null (a refused node)
    if (!d) return nullptr;
    kept_.push_back(std::move(d));
    return kept_.back().get();
  }

 private:
  std::vector<DescPtr> kept_;
};

// A pointwise node y = mode(x[, alpha2 · b]) computed in f32 (b: null for one-input modes such as
// RELU_FWD). Null with *why set when cuDNN refuses it.
DescPtr pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y, std::string* why,
                  float alpha2 = 1.0f);

// A backward pointwise node (RELU_BWD: dx = dy where the forward input x > 0, else 0).
DescPtr pointwise_backward(cudnnPointwiseMode_t mode, const Desc& dy, const Desc& x, const Desc& dx, std::string* why);

// An operation graph of the nodes (finalized on the handle); null with *why set when cuDNN refuses it.
DescPtr operation_graph(cudnnHandle_t h, const std::vector<const Desc*>& nodes, std::string* why);

// Which engines may run: PyTorch's filter (aten's Conv_v8.cpp) so that both run the same engines.
struct EngineRules {
  bool deterministic = false;          // refuse engines noted NONDETERMINISTIC
  bool f32_io = false;                 // the graph's tensors are f32 ...
  bool allow_tensor_cores_on_f32 = false;  // ... and may use TF32
  // A fused graph whose convolution reads a virtual f32 tensor (a prologue's result) must round it to
  // the io type for the tensor cores: that is the fusion, not a loss of the caller's precision.
  bool allow_down_convert = false;
  size_t max_workspace = 0;
};

struct Plan {
  std::shared_ptr<Desc> config;  // the engine config the plan refers to
  std::unique_ptr<Desc> plan;
  size_t workspace = 0;
  int64_t engine = -1;  // cuDNN's global engine index
  std::string notes;    // its numerical notes, e.g. "TENSOR_CORE+REDUCED_PRECISION_REDUCTION"
};

// Runs `plan` once on trial tensors with `workspace` bytes of scratch and waits (throws on failure).
using TrialRun = std::function<void(const Desc& plan, size_t workspace)>;

// Up to `want` usable plans, in the heuristics' order: mode A's, or when it has none the fallback list's.
// A candidate is usable when its notes pass `rules`, its plan finalizes within the workspace cap and
// `trial` runs it (a plan can finalize and still fail to execute). None usable: empty, and *why is
// "no usable engine:" with every candidate's rejection; nothing a candidate does throws out of here.
std::vector<Plan> usable_plans(cudnnHandle_t h, const Desc& graph, const EngineRules& rules, size_t want,
                               const TrialRun& trial, std::string* why);

// Runs `plan` with the tensors named by uid (each pointer 16-byte aligned: Error otherwise).
void execute(cudnnHandle_t h, const Desc& plan, std::span<const int64_t> uids, std::span<void* const> pointers,
             void* workspace);

// The fastest of `reps` runs of `run` on stream s, in milliseconds (CUDA events).
float best_time_ms(const std::function<void()>& run, cudaStream_t s, int reps);

// The handle attributes are deprecated from cuDNN 9.x on (device properties replace them), yet older
// 9.x runtimes, such as the one PyTorch's wheels bring to the GPU machine, need them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

}  // namespace fastnn::cuda::cudnn_backend
