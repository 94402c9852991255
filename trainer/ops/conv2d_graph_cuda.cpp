// conv2d's passes through cuDNN's graph (backend) API: contract in conv2d_graph_cuda.h. The descriptors,
// engine filter and trial runs are cuda/cudnn_backend.h's, shared with the conv + batch-norm fusions.
#include "trainer/ops/conv2d_graph_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "core/check.h"
#include "trainer/cuda/cudnn_backend.h"
#include "trainer/cuda/runtime.h"
#include "trainer/tensor.h"

namespace fastnn::ops::cudnn_graph {
namespace {

namespace cb = cuda::cudnn_backend;
using cb::Desc;

constexpr int64_t kUidConvX = 1, kUidConvW = 2, kUidConvY = 3;

// Bytes of an element of `type` (the three io types conv2d uses).
size_t element_bytes(cudnnDataType_t type) { return type == CUDNN_DATA_FLOAT ? 4 : 2; }

}  // namespace

struct ConvPlan::Descriptors {
  cb::DescPtr x, w, y, conv, op, graph;
  std::shared_ptr<Desc> config;  // the heuristics' engine config the plan refers to
  cb::DescPtr plan;
};

ConvPlan::ConvPlan() : d_(std::make_unique<Descriptors>()) {}
ConvPlan::~ConvPlan() = default;

namespace {

void execute_plan(cudnnHandle_t h, const Desc& plan, const void* x, const void* w, const void* y, void* ws) {
  const std::array<int64_t, 3> uids{kUidConvX, kUidConvW, kUidConvY};
  const std::array<void*, 3> ptrs{const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  cb::execute(h, plan, uids, ptrs, ws);
}

using cuda::zeroed_bytes;

// The pass's three tensors, for trial and timed runs (their contents do not matter).
struct TrialTensors {
  Tensor x, w, y;
  TrialTensors(const ConvProblem& pb, cudaStream_t s)
      : x(zeroed_bytes(static_cast<size_t>(pb.n * pb.c * pb.h * pb.w) * element_bytes(pb.io), s)),
        w(zeroed_bytes(static_cast<size_t>(pb.k * (pb.c / pb.groups) * pb.r * pb.s) * element_bytes(pb.io), s)),
        y(zeroed_bytes(static_cast<size_t>(pb.n * pb.k * pb.p * pb.q) * element_bytes(pb.io), s)) {}
};

// The adding data gradient (beta = 1) is an engine of its own, and one that ignored beta would pass a
// trial on zeros. Its trial therefore starts the first kBetaProbe elements of dx at 1.0; w and dy stay
// zero, so 0 + 1 · dx must leave them at 1.0, which is read back after the run.
constexpr size_t kBetaProbe = 4096;

std::vector<unsigned char> ones_of(cudnnDataType_t io, size_t n) {
  const uint32_t f32_one = 0x3F800000u;
  const uint16_t half_one = io == CUDNN_DATA_BFLOAT16 ? 0x3F80u : 0x3C00u;  // f16 or bf16 1.0
  const size_t e = element_bytes(io);
  std::vector<unsigned char> out(n * e);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * e, e == 4 ? static_cast<const void*>(&f32_one) : static_cast<const void*>(&half_one), e);
  return out;
}

class BetaProbe {
 public:
  BetaProbe(const ConvProblem& pb, Tensor& dx, cudaStream_t s)
      : dx_(dx), s_(s), ones_(ones_of(pb.io, std::min(kBetaProbe, static_cast<size_t>(pb.n * pb.c * pb.h * pb.w)))) {}
  void arm() const {
    CUDA_CHECK(cudaMemcpyAsync(dx_.raw(), ones_.data(), ones_.size(), cudaMemcpyHostToDevice, s_));
  }
  // After the run (the stream synchronised): an Error, which rejects the engine, unless dx kept its ones.
  void check() const {
    std::vector<unsigned char> got(ones_.size());
    CUDA_CHECK(cudaMemcpyAsync(got.data(), dx_.raw(), got.size(), cudaMemcpyDeviceToHost, s_));
    CUDA_CHECK(cudaStreamSynchronize(s_));
    if (got != ones_) throw Error("the adding data gradient did not add (its trial's dx lost the 1.0 it started at)");
  }

 private:
  Tensor& dx_;
  cudaStream_t s_;
  std::vector<unsigned char> ones_;
};

// Index of the fastest plan: the best of three timed runs each (each has run once already).
size_t fastest(cudnnHandle_t h, const std::vector<cb::Plan>& plans, const TrialTensors& trial, cudaStream_t s) {
  size_t most = 0;
  for (const cb::Plan& p : plans) most = std::max(most, p.workspace);
  Tensor ws = zeroed_bytes(most, s);
  size_t best = 0;
  float best_ms = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    const float ms = cb::best_time_ms(
        [&] { execute_plan(h, *plans[i].plan, trial.x.raw(), trial.w.raw(), trial.y.raw(), ws.raw()); }, s, 3);
    if (i == 0 || ms < best_ms) best_ms = ms, best = i;
  }
  return best;
}

}  // namespace

std::shared_ptr<const ConvPlan> ConvPlan::build(const ConvProblem& pb, ConvPass pass, float beta,
                                                const EngineChoice& choice, std::string* why) {
  const cudaStream_t s = cuda::current_stream();
  const cudnnHandle_t h = cuda::cudnn_handle(s);
  auto out = std::shared_ptr<ConvPlan>(new ConvPlan());
  Descriptors& d = *out->d_;
  const int64_t cg = pb.c / pb.groups;
  d.x = cb::tensor(kUidConvX, pb.io, {pb.n, pb.c, pb.h, pb.w}, pb.nhwc);
  d.w = cb::tensor(kUidConvW, pb.io, {pb.k, cg, pb.r, pb.s}, pb.nhwc);
  d.y = cb::tensor(kUidConvY, pb.io, {pb.n, pb.k, pb.p, pb.q}, pb.nhwc);
  d.conv = cb::convolution(pb.pad_h, pb.pad_w, pb.stride_h, pb.stride_w, pb.dil_h, pb.dil_w);

  // The pass's operation node (tensors by role: uids 1, 2, 3 are x, w, y).
  const cb::ConvNode kind = pass == ConvPass::kForward        ? cb::ConvNode::kForward
                            : pass == ConvPass::kBackwardData ? cb::ConvNode::kBackwardData
                                                              : cb::ConvNode::kBackwardFilter;
  d.op = cb::convolution_node(kind, *d.x, *d.w, *d.y, *d.conv, beta, why);
  if (!d.op) return nullptr;
  d.graph = cb::operation_graph(h, {d.op.get()}, why);
  if (!d.graph) return nullptr;

  // Heuristics' first usable engine, or (exhaustive) the fastest of their first usable few.
  const size_t want = choice.exhaustive ? static_cast<size_t>(kMaxTimedCandidates) : 1;
  const cb::EngineRules rules{.deterministic = choice.deterministic,
                              .f32_io = pb.io == CUDNN_DATA_FLOAT,
                              .allow_tensor_cores_on_f32 = choice.allow_tensor_cores_on_f32,
                              .max_workspace = choice.max_workspace};
  TrialTensors trial(pb, s);
  const std::optional<BetaProbe> probe =
      pass == ConvPass::kBackwardData && beta != 0.0f ? std::make_optional<BetaProbe>(pb, trial.x, s) : std::nullopt;
  const cb::TrialRun run_once = [&](const Desc& plan, size_t workspace) {
    Tensor ws = zeroed_bytes(workspace, s);
    if (probe) probe->arm();
    execute_plan(h, plan, trial.x.raw(), trial.w.raw(), trial.y.raw(), ws.raw());
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (probe) probe->check();
  };
  std::vector<cb::Plan> plans = cb::usable_plans(h, *d.graph, rules, want, run_once, why);
  if (plans.empty()) return nullptr;
  const size_t pick = plans.size() > 1 ? fastest(h, plans, trial, s) : 0;
  cb::Plan& c = plans[pick];
  d.config = c.config;
  d.plan = std::move(c.plan);
  out->workspace_ = c.workspace;
  out->description_ = str("engine ", c.engine, " (", pick + 1, " of ", plans.size(), choice.exhaustive ? ", timed" : "",
                          "; ", c.notes, "), workspace ", c.workspace, " bytes");
  return out;
}

void ConvPlan::execute(cudnnHandle_t h, const void* x, const void* w, const void* y, void* workspace) const {
  execute_plan(h, *d_->plan, x, w, y, workspace);
}

}  // namespace fastnn::ops::cudnn_graph
