// conv2d's passes through cuDNN's graph (backend) API: contract in conv2d_graph_cuda.h. Written against
// cuDNN 9's C backend API (cudnn_graph.h) directly: one convolution node needs a dozen descriptors, which
// does not justify vendoring cudnn-frontend before the fused graphs of docs/CUDNN_FUSIONS.md do.
#include "trainer/ops/conv2d_graph_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <limits>

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/tensor.h"

namespace fastnn::ops::cudnn_graph {
namespace {

// The handle attributes are deprecated from cuDNN 9.x on (device properties replace them), yet older
// 9.x runtimes, such as the one PyTorch's wheels bring to the GPU machine, need them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
constexpr int64_t kAlignment = 16;

// One owned backend descriptor.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) { CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

  template <typename V>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const V& value) {
    CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, 1, &value));
    return *this;
  }
  Desc& set_i64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
    CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data()));
    return *this;
  }
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
    const cudnnBackendDescriptor_t o = other.get();
    CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o));
    return *this;
  }
  void finalize() { CUDNN_CHECK(cudnnBackendFinalize(d_)); }
  cudnnStatus_t try_finalize() { return cudnnBackendFinalize(d_); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// dims {N, C, H, W} with channels-last or channels-first strides.
std::unique_ptr<Desc> tensor(int64_t uid, cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc) {
  auto t = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::vector<int64_t> strides =
      nhwc ? std::vector<int64_t>{h * w * c, 1, w * c, c} : std::vector<int64_t>{c * h * w, h * w, w, 1};
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type)
      .set_i64s(CUDNN_ATTR_TENSOR_DIMENSIONS, {n, c, h, w})
      .set_i64s(CUDNN_ATTR_TENSOR_STRIDES, strides)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, kAlignment);
  t->finalize();
  return t;
}

std::string notes_text(const std::vector<cudnnBackendNumericalNote_t>& notes) {
  std::string s;
  for (cudnnBackendNumericalNote_t n : notes) s += str(s.empty() ? "" : "+", static_cast<int>(n));
  return s.empty() ? "none" : s;
}

// Bytes of an element of `type` (the three io types conv2d uses).
size_t element_bytes(cudnnDataType_t type) { return type == CUDNN_DATA_FLOAT ? 4 : 2; }

}  // namespace

struct ConvPlan::Descriptors {
  std::unique_ptr<Desc> x, w, y, conv, op, graph;
  std::vector<std::shared_ptr<Desc>> configs;  // the heuristics' engine configs (the plan refers to one)
  std::unique_ptr<Desc> plan;
};

ConvPlan::ConvPlan() : d_(std::make_unique<Descriptors>()) {}
ConvPlan::~ConvPlan() = default;

namespace {

struct Candidate {
  std::shared_ptr<Desc> config;
  std::unique_ptr<Desc> plan;
  size_t workspace = 0;
  int64_t engine = -1;
};

void execute_plan(cudnnHandle_t h, const Desc& plan, const void* x, const void* w, const void* y, void* ws) {
  for (const void* p : {x, w, y})
    FASTNN_CHECK(reinterpret_cast<uintptr_t>(p) % kAlignment == 0,
                 "conv2d (conv_api=graph): a tensor at ", p, " is not 16-byte aligned; conv_api=legacy takes any");
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const std::array<int64_t, 3> uids{kUidX, kUidW, kUidY};
  std::array<void*, 3> ptrs{const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  CUDNN_CHECK(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
  pack.finalize();
  CUDNN_CHECK(cudnnBackendExecute(h, plan.get(), pack.get()));
}

// Zeroed device scratch for trial and timed runs: a device tensor (stream-ordered on the current stream,
// freed with it); undefined for 0 bytes, whose raw() is null.
Tensor zeroed(size_t bytes, cudaStream_t s) {
  if (!bytes) return Tensor();
  Tensor t = Tensor::empty({static_cast<int64_t>(bytes)}, DType::kU8, Device::kCuda);
  CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, bytes, s));
  return t;
}

// The pass's three tensors, for trial and timed runs (their contents do not matter).
struct TrialTensors {
  Tensor x, w, y;
  TrialTensors(const ConvProblem& pb, cudaStream_t s)
      : x(zeroed(static_cast<size_t>(pb.n * pb.c * pb.h * pb.w) * element_bytes(pb.io), s)),
        w(zeroed(static_cast<size_t>(pb.k * (pb.c / pb.groups) * pb.r * pb.s) * element_bytes(pb.io), s)),
        y(zeroed(static_cast<size_t>(pb.n * pb.k * pb.p * pb.q) * element_bytes(pb.io), s)) {}
};

// Up to `want` usable candidates of one heuristics mode, in its order. A candidate is usable when its
// notes pass the choice's rules, its plan finalizes within the workspace cap and it runs once on the
// trial tensors (a plan can finalize and still fail to execute). Every rejection is noted in *why;
// nothing a candidate does throws out of here.
std::vector<Candidate> candidates(cudnnHandle_t h, const Desc& graph, cudnnBackendHeurMode_t mode, cudnnDataType_t io,
                                  const EngineChoice& choice, size_t want, const TrialTensors& trial, cudaStream_t s,
                                  std::string* why) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph).set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
  int64_t count = 0;
  if (heur.try_finalize() != CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS) {
    *why += str(" heuristics mode ", static_cast<int>(mode), " failed;");
    return {};
  }
  std::vector<std::shared_ptr<Desc>> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(std::make_shared<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  int64_t got = 0;
  if (count > 0)
    CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                         &got, raw.data()));
  const bool f32 = io == CUDNN_DATA_FLOAT;
  std::vector<Candidate> out;
  for (int64_t i = 0; i < std::min(got, count) && out.size() < want; ++i) {
    int64_t index = -1;
    try {
      Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      cudnnBackendDescriptor_t e = engine.get();
      int64_t one = 0;
      CUDNN_CHECK(cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_ENGINECFG_ENGINE,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one, &e));
      CUDNN_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &one, &index));
      std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> buf{};
      int64_t n_notes = 0;
      CUDNN_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                           static_cast<int64_t>(buf.size()), &n_notes, buf.data()));
      n_notes = std::clamp<int64_t>(n_notes, 0, static_cast<int64_t>(buf.size()));
      const std::vector<cudnnBackendNumericalNote_t> notes(buf.begin(), buf.begin() + n_notes);
      auto has = [&](cudnnBackendNumericalNote_t n) { return std::find(notes.begin(), notes.end(), n) != notes.end(); };
      // PyTorch's filter (Conv_v8.cpp), so that both run the same engines: never inputs converted below
      // their type; f32 on tensor cores (TF32) only when allowed. Like PyTorch, f16/bf16 engines noted
      // REDUCED_PRECISION_REDUCTION are kept (the gpu tests hold every pass to the CPU oracle).
      const char* refused = choice.deterministic && has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) ? "not deterministic"
                            : has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)                    ? "converts its inputs down"
                            : f32 && !choice.allow_tensor_cores_on_f32 && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)
                                ? "TF32"
                                : nullptr;
      if (refused) {
        *why += str(" engine ", index, ": ", refused, " (notes ", notes_text(notes), ");");
        continue;
      }
      auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan->set(kPlanHandle, CUDNN_TYPE_HANDLE, h).set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[static_cast<size_t>(i)]);
      if (const cudnnStatus_t st = plan->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
        *why += str(" engine ", index, ": ", cudnnGetErrorString(st), ";");
        continue;
      }
      int64_t ws = 0;
      CUDNN_CHECK(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                           &one, &ws));
      if (ws < 0 || static_cast<uint64_t>(ws) > choice.max_workspace) {
        *why += str(" engine ", index, ": workspace ", ws, " bytes;");
        continue;
      }
      Tensor workspace = zeroed(static_cast<size_t>(ws), s);
      execute_plan(h, *plan, trial.x.raw(), trial.w.raw(), trial.y.raw(), workspace.raw());
      CUDA_CHECK(cudaStreamSynchronize(s));
      out.push_back(Candidate{configs[static_cast<size_t>(i)], std::move(plan), static_cast<size_t>(ws), index});
    } catch (const std::exception& ex) {
      *why += str(" engine ", index, ": ", ex.what(), ";");
    }
  }
  return out;
}

// Index of the fastest candidate: the best of three timed runs each (each has run once already).
size_t fastest(cudnnHandle_t h, const std::vector<Candidate>& cands, const TrialTensors& trial, cudaStream_t s) {
  size_t most = 0;
  for (const Candidate& c : cands) most = std::max(most, c.workspace);
  Tensor ws = zeroed(most, s);
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  size_t best = 0;
  float best_ms = std::numeric_limits<float>::max();
  for (size_t i = 0; i < cands.size(); ++i) {
    float ms = std::numeric_limits<float>::max();
    for (int rep = 0; rep < 3; ++rep) {
      CUDA_CHECK(cudaEventRecord(start, s));
      execute_plan(h, *cands[i].plan, trial.x.raw(), trial.w.raw(), trial.y.raw(), ws.raw());
      CUDA_CHECK(cudaEventRecord(stop, s));
      CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms = std::min(ms, t);
    }
    if (ms < best_ms) best_ms = ms, best = i;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace

std::shared_ptr<const ConvPlan> ConvPlan::build(const ConvProblem& pb, ConvPass pass, float beta,
                                                const EngineChoice& choice, std::string* why) {
  const cudaStream_t s = ::fastnn::cuda::current_stream();
  const cudnnHandle_t h = ::fastnn::cuda::cudnn_handle(s);
  auto out = std::shared_ptr<ConvPlan>(new ConvPlan());
  Descriptors& d = *out->d_;
  const int64_t cg = pb.c / pb.groups;
  d.x = tensor(kUidX, pb.io, pb.n, pb.c, pb.h, pb.w, pb.nhwc);
  d.w = tensor(kUidW, pb.io, pb.k, cg, pb.r, pb.s, pb.nhwc);
  d.y = tensor(kUidY, pb.io, pb.n, pb.k, pb.p, pb.q, pb.nhwc);

  d.conv = std::make_unique<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  d.conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, int64_t{2})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {pb.dil_h, pb.dil_w})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {pb.stride_h, pb.stride_w})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {pb.pad_h, pb.pad_w})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {pb.pad_h, pb.pad_w});
  d.conv->finalize();

  // The pass's operation node and its attribute names, by tensor role (uids 1, 2, 3: x, w, y).
  struct PassAttrs {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const PassAttrs a =
      pass == ConvPass::kForward
          ? PassAttrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}
      : pass == ConvPass::kBackwardData
          ? PassAttrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
          : PassAttrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const float alpha = 1.0f;
  d.op = std::make_unique<Desc>(a.type);
  d.op->set_desc(a.x, *d.x)
      .set_desc(a.w, *d.w)
      .set_desc(a.y, *d.y)
      .set_desc(a.conv, *d.conv)
      .set(a.alpha, CUDNN_TYPE_FLOAT, alpha)
      .set(a.beta, CUDNN_TYPE_FLOAT, beta);
  if (const cudnnStatus_t st = d.op->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    *why = str("the convolution node: ", cudnnGetErrorString(st));
    return nullptr;
  }
  d.graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  const cudnnBackendDescriptor_t op = d.op->get();
  CUDNN_CHECK(cudnnBackendSetAttribute(d.graph->get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
  d.graph->set(kGraphHandle, CUDNN_TYPE_HANDLE, h);
  if (const cudnnStatus_t st = d.graph->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    *why = str("the operation graph: ", cudnnGetErrorString(st));
    return nullptr;
  }

  // Heuristics' first usable engine, or (exhaustive) the fastest of their first usable few.
  const size_t want = choice.exhaustive ? static_cast<size_t>(kMaxTimedCandidates) : 1;
  const TrialTensors trial(pb, s);
  std::string rejected;
  std::vector<Candidate> cands = candidates(h, *d.graph, CUDNN_HEUR_MODE_A, pb.io, choice, want, trial, s, &rejected);
  if (cands.empty())
    cands = candidates(h, *d.graph, CUDNN_HEUR_MODE_FALLBACK, pb.io, choice, want, trial, s, &rejected);
  if (cands.empty()) {
    *why = str("no usable engine:", rejected.empty() ? " heuristics listed none" : rejected);
    return nullptr;
  }
  const size_t pick = cands.size() > 1 ? fastest(h, cands, trial, s) : 0;
  Candidate& c = cands[pick];
  d.configs = {c.config};
  d.plan = std::move(c.plan);
  out->workspace_ = c.workspace;
  out->description_ = str("engine ", c.engine, " (", pick + 1, " of ", cands.size(), choice.exhaustive ? ", timed" : "",
                          "), workspace ", c.workspace, " bytes");
  return out;
}

void ConvPlan::execute(cudnnHandle_t h, const void* x, const void* w, const void* y, void* workspace) const {
  execute_plan(h, *d_->plan, x, w, y, workspace);
}

}  // namespace fastnn::ops::cudnn_graph
