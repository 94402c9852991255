// cuDNN's graph (backend) API as fastnn uses it: contract in cudnn_backend.h.
#include "trainer/cuda/cudnn_backend.h"

#include <algorithm>
#include <array>
#include <limits>

#include "core/check.h"

namespace fastnn::cuda::cudnn_backend {

namespace {

// cuDNN's last unread message on this thread (reading it clears it), or "".
std::string take_last_message() {
  std::array<char, 512> last{};
  cudnnGetLastErrorString(last.data(), last.size());
  last.back() = '\0';
  return last.data();
}

}  // namespace

std::string refusal(cudnnStatus_t st) {
  const std::string last = take_last_message();
  return last.empty() ? std::string(cudnnGetErrorString(st)) : str(cudnnGetErrorString(st), " (", last, ")");
}

Desc::Desc(cudnnBackendDescriptorType_t type) { CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }

Desc::~Desc() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

Desc& Desc::set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                    const void* values) {
  CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
  return *this;
}

Desc& Desc::set_i64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
  return set_raw(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
}

Desc& Desc::set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
  const cudnnBackendDescriptor_t o = other.get();
  return set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
}

void Desc::finalize() { CUDNN_CHECK(cudnnBackendFinalize(d_)); }

cudnnStatus_t Desc::try_finalize() {
  take_last_message();  // a stale message cleared: refusal() then says this call's
  return cudnnBackendFinalize(d_);
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& d, bool channels_last) {
  FASTNN_CHECK(d.size() == 4, "cudnn_backend: tensors are 4-D {N, C, H, W}");
  const int64_t c = d[1], h = d[2], w = d[3];
  return channels_last ? std::vector<int64_t>{h * w * c, 1, w * c, c} : std::vector<int64_t>{c * h * w, h * w, w, 1};
}

DescPtr tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& nchw, bool channels_last, bool is_virtual) {
  auto t = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type)
      .set_i64s(CUDNN_ATTR_TENSOR_DIMENSIONS, nchw)
      .set_i64s(CUDNN_ATTR_TENSOR_STRIDES, packed_strides(nchw, channels_last))
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, kAlignment);
  if (is_virtual) t->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, true);
  t->finalize();
  return t;
}

DescPtr convolution(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dil_h, int64_t dil_w) {
  auto conv = std::make_unique<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, int64_t{2})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {dil_h, dil_w})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {stride_h, stride_w})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {pad_h, pad_w})
      .set_i64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {pad_h, pad_w});
  conv->finalize();
  return conv;
}

DescPtr convolution_node(ConvNode kind, const Desc& x, const Desc& w, const Desc& y, const Desc& conv, float beta,
                         std::string* why) {
  // The node's type and its attribute names, by tensor role.
  struct Attrs {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const Attrs a =
      kind == ConvNode::kForward
          ? Attrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}
      : kind == ConvNode::kBackwardData
          ? Attrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
          : Attrs{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const float alpha = 1.0f;
  auto op = std::make_unique<Desc>(a.type);
  op->set_desc(a.x, x)
      .set_desc(a.w, w)
      .set_desc(a.y, y)
      .set_desc(a.conv, conv)
      .set(a.alpha, CUDNN_TYPE_FLOAT, alpha)
      .set(a.beta, CUDNN_TYPE_FLOAT, beta);
  if (const cudnnStatus_t st = op->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    *why = str("the convolution node: ", refusal(st));
    return nullptr;
  }
  return op;
}

namespace {

// The pointwise descriptor of a node: the mode, computed in f32.
DescPtr pointwise_descriptor(cudnnPointwiseMode_t mode, std::string* why) {
  auto pw = std::make_unique<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  if (const cudnnStatus_t st = pw->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    *why = str("pointwise mode ", static_cast<int>(mode), ": ", refusal(st));
    return nullptr;
  }
  return pw;
}

// Both scales, always, as cudnn-frontend sets them on every pointwise node, one-input and backward ones
// included (the backend's defaults are not documented): alpha1 = 1, alpha2 on the second input.
void set_scales(Desc& op, float alpha2) {
  const float alpha1 = 1.0f;
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, alpha1)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, alpha2);
}

DescPtr finalized_node(DescPtr op, cudnnPointwiseMode_t mode, std::string* why) {
  if (const cudnnStatus_t st = op->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    *why = str("pointwise node (mode ", static_cast<int>(mode), "): ", refusal(st));
    return nullptr;
  }
  return op;
}

}  // namespace

DescPtr pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y, std::string* why,
                  float alpha2) {
  DescPtr pw = pointwise_descriptor(mode, why);
  if (!pw) return nullptr;
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  set_scales(*op, b ? alpha2 : 1.0f);
  op->adopt(std::move(pw));
  return finalized_node(std::move(op), mode, why);
}

DescPtr pointwise_backward(cudnnPointwiseMode_t mode, const Desc& dy, const Desc& x, const Desc& dx, std::string* why) {
  DescPtr pw = pointwise_descriptor(mode, why);
  if (!pw) return nullptr;
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, dy)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, dx);
  set_scales(*op, 1.0f);
  op->adopt(std::move(pw));
  return finalized_node(std::move(op), mode, why);
}

DescPtr operation_graph(cudnnHandle_t h, const std::vector<const Desc*>& nodes, std::string* why) {
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const Desc* n : nodes) raw.push_back(n->get());
  auto g = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  g->set_raw(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()), raw.data())
      .set(kGraphHandle, CUDNN_TYPE_HANDLE, h);
  if (const cudnnStatus_t st = g->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
    *why = str("the operation graph: ", refusal(st));
    return nullptr;
  }
  return g;
}

namespace {

const char* note_name(cudnnBackendNumericalNote_t n) {
  switch (n) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: return "TENSOR_CORE";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return "DOWN_CONVERT_INPUTS";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return "REDUCED_PRECISION_REDUCTION";
    case CUDNN_NUMERICAL_NOTE_FFT: return "FFT";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: return "NONDETERMINISTIC";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD: return "WINOGRAD";
    default: return "OTHER";
  }
}

// The engine's numerical notes, and whether cuDNN compiles it at run time (a runtime-fusion engine
// rather than a pre-compiled one: the first build of each shape then takes seconds).
struct EngineInfo {
  int64_t index = -1;
  std::vector<cudnnBackendNumericalNote_t> notes;
  bool runtime_compiled = false;
  bool has(cudnnBackendNumericalNote_t n) const { return std::find(notes.begin(), notes.end(), n) != notes.end(); }
  std::string text() const {
    std::string s;
    for (cudnnBackendNumericalNote_t n : notes) s += str(s.empty() ? "" : "+", note_name(n));
    if (s.empty()) s = "no notes";
    return runtime_compiled ? s + ", runtime-compiled" : s;
  }
};

EngineInfo engine_info(cudnnBackendDescriptor_t config) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t one = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one, &e));
  EngineInfo info;
  CUDNN_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &one, &info.index));
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> buf{};
  int64_t n = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       static_cast<int64_t>(buf.size()), &n, buf.data()));
  n = std::clamp<int64_t>(n, 0, static_cast<int64_t>(buf.size()));
  info.notes.assign(buf.begin(), buf.begin() + n);
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behaviour{};
  int64_t nb = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               static_cast<int64_t>(behaviour.size()), &nb, behaviour.data()) == CUDNN_STATUS_SUCCESS) {
    nb = std::clamp<int64_t>(nb, 0, static_cast<int64_t>(behaviour.size()));
    info.runtime_compiled = std::find(behaviour.begin(), behaviour.begin() + nb, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) !=
                            behaviour.begin() + nb;
  }
  return info;
}

// usable_plans for one heuristics mode; rejections appended to *why.
std::vector<Plan> usable_plans_of_mode(cudnnHandle_t h, const Desc& graph, cudnnBackendHeurMode_t mode,
                                       const EngineRules& rules, size_t want, const TrialRun& trial, std::string* why) {
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
  std::vector<Plan> out;
  for (int64_t i = 0; i < std::min(got, count) && out.size() < want; ++i) {
    int64_t index = -1;
    try {
      const EngineInfo info = engine_info(raw[static_cast<size_t>(i)]);
      index = info.index;
      // PyTorch's filter: never inputs converted below their type; f32 on tensor cores (TF32) only when
      // allowed. Like PyTorch, f16/bf16 engines noted REDUCED_PRECISION_REDUCTION are kept (the gpu tests
      // hold every pass to the CPU oracle).
      const char* refused =
          rules.deterministic && info.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) ? "not deterministic"
          : !rules.allow_down_convert && info.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ? "converts its inputs down"
          : rules.f32_io && !rules.allow_tensor_cores_on_f32 && info.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ? "TF32"
                                                                                                           : nullptr;
      if (refused) {
        *why += str(" engine ", index, ": ", refused, " (", info.text(), ");");
        continue;
      }
      auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan->set(kPlanHandle, CUDNN_TYPE_HANDLE, h).set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[static_cast<size_t>(i)]);
      if (const cudnnStatus_t st = plan->try_finalize(); st != CUDNN_STATUS_SUCCESS) {
        *why += str(" engine ", index, ": ", refusal(st), ";");
        continue;
      }
      int64_t ws = 0, one = 0;
      CUDNN_CHECK(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                           &one, &ws));
      if (ws < 0 || static_cast<uint64_t>(ws) > rules.max_workspace) {
        *why += str(" engine ", index, ": workspace ", ws, " bytes;");
        continue;
      }
      trial(*plan, static_cast<size_t>(ws));
      out.push_back(Plan{configs[static_cast<size_t>(i)], std::move(plan), static_cast<size_t>(ws), index, info.text()});
    } catch (const std::exception& ex) {
      *why += str(" engine ", index, ": ", ex.what(), ";");
    }
  }
  return out;
}

}  // namespace

std::vector<Plan> usable_plans(cudnnHandle_t h, const Desc& graph, const EngineRules& rules, size_t want,
                               const TrialRun& trial, std::string* why) {
  std::string rejected;
  std::vector<Plan> plans = usable_plans_of_mode(h, graph, CUDNN_HEUR_MODE_A, rules, want, trial, &rejected);
  if (plans.empty()) plans = usable_plans_of_mode(h, graph, CUDNN_HEUR_MODE_FALLBACK, rules, want, trial, &rejected);
  if (plans.empty()) *why = str("no usable engine:", rejected.empty() ? " heuristics listed none" : rejected);
  return plans;
}

void execute(cudnnHandle_t h, const Desc& plan, std::span<const int64_t> uids, std::span<void* const> pointers,
             void* workspace) {
  FASTNN_CHECK(uids.size() == pointers.size(), "cudnn_backend::execute: ", uids.size(), " uids for ", pointers.size(),
               " pointers");
  for (void* p : pointers)
    FASTNN_CHECK(reinterpret_cast<uintptr_t>(p) % kAlignment == 0, "cuDNN graph: a tensor at ", p,
                 " is not 16-byte aligned");
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set_raw(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data())
      .set_raw(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
               pointers.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, workspace);
  pack.finalize();
  CUDNN_CHECK(cudnnBackendExecute(h, plan.get(), pack.get()));
}

float best_time_ms(const std::function<void()>& run, cudaStream_t s, int reps) {
  struct Events {  // destroyed on every path out
    cudaEvent_t start = nullptr, stop = nullptr;
    Events() {
      CUDA_CHECK(cudaEventCreate(&start));
      CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } ev;
  float best = std::numeric_limits<float>::max();
  for (int rep = 0; rep < reps; ++rep) {
    CUDA_CHECK(cudaEventRecord(ev.start, s));
    run();
    CUDA_CHECK(cudaEventRecord(ev.stop, s));
    CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, ev.start, ev.stop));
    best = std::min(best, t);
  }
  return best;
}

}  // namespace fastnn::cuda::cudnn_backend
