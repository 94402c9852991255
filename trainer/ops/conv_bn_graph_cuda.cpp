// Convolution + batch-norm fusions through cuDNN's graph API: contract in conv_bn_graph_cuda.h. The node
// layouts follow cuDNN's "ConvBNfprop", "ConvBNwgrad" and "DgradDreluBNBwdWeight" patterns (cuDNN Graph
// API guide, "Specialized Pre-Compiled Engines"): pointwise MUL, ADD, RELU_FWD on x into virtual f32
// tensors, then the convolution node, then (forward) a GEN_STATS node on its output; for the dgrad
// graph, the data gradient, the batch norm recomputed, RELU_BWD and BN_BWD_WEIGHTS.
#include "trainer/ops/conv_bn_graph_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/check.h"
#include "trainer/cuda/cudnn_backend.h"
#include "trainer/cuda/runtime.h"
#include "trainer/tensor.h"

namespace fastnn::ops::cudnn_graph {
namespace {

namespace cb = cuda::cudnn_backend;
using cb::Desc;
using cb::DescPtr;

// Tensor uids in the variant pack; the virtual tensors (1xx: results inside the fused kernel) have no
// pointer.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3, kUidScale = 4, kUidBias = 5, kUidSum = 6, kUidSqsum = 7;
constexpr int64_t kUidMean = 8, kUidInvstd = 9, kUidDrelu = 10, kUidDscale = 11, kUidDbias = 12, kUidEqDy = 13,
                  kUidEqX = 14, kUidEqBias = 15;
constexpr int64_t kUidScaled = 101, kUidShifted = 102, kUidActivated = 103;
constexpr int64_t kUidDgrad = 111, kUidCentered = 112, kUidNormalised = 113, kUidBnScaled = 114, kUidBnOut = 115;

using cuda::zeroed_bytes;

}  // namespace

const char* graph_name(ConvBnGraph g) {
  switch (g) {
    case ConvBnGraph::kFpropStats: return "conv+stats";
    case ConvBnGraph::kScaleBiasReluFpropStats: return "scale-bias-relu+conv+stats";
    case ConvBnGraph::kScaleBiasReluWgrad: return "scale-bias-relu+wgrad";
    case ConvBnGraph::kDgradDreluBnWeight: return "dgrad+drelu+bn-weight";
  }
  return "?";
}

bool has_prologue(ConvBnGraph g) {
  return g == ConvBnGraph::kScaleBiasReluFpropStats || g == ConvBnGraph::kScaleBiasReluWgrad;
}

enum class ConvBnPlan::MeanForm { kAddNegated, kSubtract };

struct ConvBnPlan::Descriptors {
  cb::DescKeeper keep;  // every descriptor the graph refers to lives as long as the plan
  std::shared_ptr<Desc> config;
  DescPtr plan;
};

ConvBnPlan::ConvBnPlan() : d_(std::make_unique<Descriptors>()) {}
ConvBnPlan::~ConvBnPlan() = default;

namespace {

// The variant pack of one graph: uids and pointers, in the same order.
struct Pack {
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  void add(int64_t uid, const void* p) {
    uids.push_back(uid);
    ptrs.push_back(const_cast<void*>(p));
  }
};

Pack pack_of(ConvBnGraph g, const ConvBnTensors& t) {
  Pack p;
  p.add(kUidX, t.x);
  p.add(kUidW, t.w);
  p.add(kUidY, t.y);
  if (g != ConvBnGraph::kFpropStats) {
    p.add(kUidScale, t.scale);
    p.add(kUidBias, t.bias);
  }
  if (g == ConvBnGraph::kFpropStats || g == ConvBnGraph::kScaleBiasReluFpropStats) {
    p.add(kUidSum, t.sum);
    p.add(kUidSqsum, t.sqsum);
  }
  if (g == ConvBnGraph::kDgradDreluBnWeight) {
    for (auto [uid, ptr] : {std::pair<int64_t, const void*>{kUidMean, t.mean}, {kUidInvstd, t.invstd}, {kUidDrelu, t.drelu},
                            {kUidDscale, t.dscale}, {kUidDbias, t.dbias}, {kUidEqDy, t.eq_dy}, {kUidEqX, t.eq_x},
                            {kUidEqBias, t.eq_bias}})
      p.add(uid, ptr);
  }
  return p;
}

void run(cudnnHandle_t h, const Desc& plan, ConvBnGraph g, const ConvBnTensors& t, void* ws) {
  const Pack p = pack_of(g, t);
  cb::execute(h, plan, p.uids, p.ptrs, ws);
}

// The nodes of `nodes` in order, or none when one of them is null (cuDNN refused it; *why says why).
std::vector<const Desc*> all_or_none(std::initializer_list<const Desc*> nodes) {
  std::vector<const Desc*> out;
  for (const Desc* n : nodes) {
    if (!n) return {};
    out.push_back(n);
  }
  return out;
}

// The prologue: relu(x · scale + bias) in f32, never written (virtual tensors); its result is *act.
std::vector<const Desc*> prologue_nodes(const ConvProblem& pb, const Desc& x, cb::DescKeeper& keep, const Desc** act,
                                        std::string* why) {
  const std::vector<int64_t> x_dims{pb.n, pb.c, pb.h, pb.w};
  const Desc* scale = keep.own(cb::tensor(kUidScale, pb.io, {1, pb.c, 1, 1}, true));
  const Desc* bias = keep.own(cb::tensor(kUidBias, pb.io, {1, pb.c, 1, 1}, true));
  const Desc* scaled = keep.own(cb::tensor(kUidScaled, CUDNN_DATA_FLOAT, x_dims, true, true));
  const Desc* shifted = keep.own(cb::tensor(kUidShifted, CUDNN_DATA_FLOAT, x_dims, true, true));
  *act = keep.own(cb::tensor(kUidActivated, CUDNN_DATA_FLOAT, x_dims, true, true));
  return all_or_none({keep.own(cb::pointwise(CUDNN_POINTWISE_MUL, x, scale, *scaled, why)),
                      keep.own(cb::pointwise(CUDNN_POINTWISE_ADD, *scaled, bias, *shifted, why)),
                      keep.own(cb::pointwise(CUDNN_POINTWISE_RELU_FWD, *shifted, nullptr, **act, why))});
}

// How the dgrad graph's first pointwise node takes the mean from x. cuDNN's graph API guide says an ADD
// with alpha2 = −1, as Paddle's production kernel builds it; cudnn-frontend's sample and its legacy
// fusion sample use SUB (the frontend's sample added the mean until v1.11). Which form the pre-compiled
// engine matches is not yet measured, so build() tries the guide's first and then the other.
using MeanForm = ConvBnPlan::MeanForm;

// The dgrad graph (cuDNN's "DgradDreluBNBwdWeight" pattern): g = dgrad(dy, w) (virtual f32); the batch
// norm's output recomputed from x as ((x − mean) · invstd) · scale + bias; drelu = RELU_BWD(g, that)
// (written); then the batch norm's weight gradients and dx's coefficients from drelu and x.
std::vector<const Desc*> dgrad_nodes(const ConvProblem& pb, const Desc& conv, MeanForm form, cb::DescKeeper& keep,
                                     std::string* why) {
  const std::vector<int64_t> x_dims{pb.n, pb.c, pb.h, pb.w}, per_c{1, pb.c, 1, 1};
  auto f32 = [&](int64_t uid, const std::vector<int64_t>& dims, bool is_virtual) {
    return keep.own(cb::tensor(uid, CUDNN_DATA_FLOAT, dims, true, is_virtual));
  };
  const Desc* dy = keep.own(cb::tensor(kUidY, pb.io, {pb.n, pb.k, pb.p, pb.q}, true));
  const Desc* w = keep.own(cb::tensor(kUidW, pb.io, {pb.k, pb.c, pb.r, pb.s}, true));
  const Desc* x = keep.own(cb::tensor(kUidX, pb.io, x_dims, true));
  const Desc* drelu = keep.own(cb::tensor(kUidDrelu, pb.io, x_dims, true));
  const Desc *mean = f32(kUidMean, per_c, false), *invstd = f32(kUidInvstd, per_c, false);
  const Desc *scale = f32(kUidScale, per_c, false), *bias = f32(kUidBias, per_c, false);
  const Desc* dgrad = f32(kUidDgrad, x_dims, true);
  const Desc* centered = f32(kUidCentered, x_dims, true);
  const Desc* normalised = f32(kUidNormalised, x_dims, true);
  const Desc* scaled = f32(kUidBnScaled, x_dims, true);
  const Desc* bn_out = f32(kUidBnOut, x_dims, true);

  auto bn = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR);
  bn->set(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC, *mean)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC, *invstd)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC, *scale)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC, *x)
      .set_desc(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC, *drelu);
  for (auto [attr, uid] : {std::pair{CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC, kUidDscale},
                           {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC, kUidDbias},
                           {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC, kUidEqDy},
                           {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC, kUidEqX},
                           {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS, kUidEqBias}})
    bn->set_desc(attr, *f32(uid, per_c, false));
  const Desc* bn_node = nullptr;
  if (const cudnnStatus_t st = bn->try_finalize(); st != CUDNN_STATUS_SUCCESS)
    *why = str("the batch-norm weight-gradient node: ", cb::refusal(st));
  else
    bn_node = keep.own(std::move(bn));

  return all_or_none({keep.own(cb::convolution_node(cb::ConvNode::kBackwardData, *dgrad, *w, *dy, conv, 0.0f, why)),
                      keep.own(form == MeanForm::kSubtract
                                   ? cb::pointwise(CUDNN_POINTWISE_SUB, *x, mean, *centered, why)
                                   : cb::pointwise(CUDNN_POINTWISE_ADD, *x, mean, *centered, why, -1.0f)),
                      keep.own(cb::pointwise(CUDNN_POINTWISE_MUL, *centered, invstd, *normalised, why)),
                      keep.own(cb::pointwise(CUDNN_POINTWISE_MUL, *normalised, scale, *scaled, why)),
                      keep.own(cb::pointwise(CUDNN_POINTWISE_ADD, *scaled, bias, *bn_out, why)),
                      keep.own(cb::pointwise_backward(CUDNN_POINTWISE_RELU_BWD, *dgrad, *bn_out, *drelu, why)),
                      bn_node});
}

// The graph's nodes, in order; every descriptor goes to `keep`. Empty when cuDNN refuses a node.
std::vector<const Desc*> nodes(const ConvProblem& pb, ConvBnGraph g, MeanForm form, cb::DescKeeper& keep,
                               std::string* why) {
  const Desc* conv = keep.own(cb::convolution(pb.pad_h, pb.pad_w, pb.stride_h, pb.stride_w, pb.dil_h, pb.dil_w));
  if (g == ConvBnGraph::kDgradDreluBnWeight) return dgrad_nodes(pb, *conv, form, keep, why);
  const Desc* x = keep.own(cb::tensor(kUidX, pb.io, {pb.n, pb.c, pb.h, pb.w}, true));
  const Desc* w = keep.own(cb::tensor(kUidW, pb.io, {pb.k, pb.c, pb.r, pb.s}, true));
  const Desc* y = keep.own(cb::tensor(kUidY, pb.io, {pb.n, pb.k, pb.p, pb.q}, true));
  std::vector<const Desc*> out;
  const Desc* conv_x = x;
  if (has_prologue(g)) {
    out = prologue_nodes(pb, *x, keep, &conv_x, why);
    if (out.empty()) return {};
  }
  if (g == ConvBnGraph::kScaleBiasReluWgrad) {
    const Desc* node = keep.own(cb::convolution_node(cb::ConvNode::kBackwardFilter, *conv_x, *w, *y, *conv, 0.0f, why));
    if (!node) return {};
    out.push_back(node);
    return out;
  }
  // Forward, then the statistics of y for the batch norm that follows.
  const Desc* sum = keep.own(cb::tensor(kUidSum, CUDNN_DATA_FLOAT, {1, pb.k, 1, 1}, true));
  const Desc* sqsum = keep.own(cb::tensor(kUidSqsum, CUDNN_DATA_FLOAT, {1, pb.k, 1, 1}, true));
  auto stats = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
  stats->set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, CUDNN_GENSTATS_SUM_SQSUM)
      .set(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT)
      .set_desc(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, *y)
      .set_desc(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, *sum)
      .set_desc(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, *sqsum);
  const Desc* stats_node = nullptr;
  if (const cudnnStatus_t st = stats->try_finalize(); st != CUDNN_STATUS_SUCCESS)
    *why = str("the statistics node: ", cb::refusal(st));
  else
    stats_node = keep.own(std::move(stats));
  const std::vector<const Desc*> rest =
      all_or_none({keep.own(cb::convolution_node(cb::ConvNode::kForward, *conv_x, *w, *y, *conv, 0.0f, why)), stats_node});
  if (rest.empty()) return {};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace

std::shared_ptr<const ConvBnPlan> ConvBnPlan::build(const ConvProblem& pb, ConvBnGraph graph, const EngineChoice& choice,
                                                    std::string* why) {
  FASTNN_CHECK(pb.nhwc && pb.groups == 1 && (pb.io == CUDNN_DATA_HALF || pb.io == CUDNN_DATA_BFLOAT16),
               "conv + batch-norm graphs are channels-last f16/bf16 convolutions with one group");
  if (graph != ConvBnGraph::kDgradDreluBnWeight) return build_form(pb, graph, choice, MeanForm::kAddNegated, why);
  std::string first;
  if (auto plan = build_form(pb, graph, choice, MeanForm::kAddNegated, &first)) return plan;
  std::string second;
  std::shared_ptr<ConvBnPlan> plan = build_form(pb, graph, choice, MeanForm::kSubtract, &second);
  if (!plan) {
    *why = str("with the mean as ADD, alpha2 = -1: ", first, "; as SUB: ", second);
    return nullptr;
  }
  // Callers log the description of a plan that builds: it also says why the guide's form did not.
  plan->description_ += str(" (ADD with alpha2 = -1 had none: ", first, ")");
  return plan;
}

std::shared_ptr<ConvBnPlan> ConvBnPlan::build_form(const ConvProblem& pb, ConvBnGraph graph,
                                                   const EngineChoice& choice, MeanForm form, std::string* why) {
  const cudaStream_t s = cuda::current_stream();
  const cudnnHandle_t h = cuda::cudnn_handle(s);
  auto out = std::shared_ptr<ConvBnPlan>(new ConvBnPlan());
  out->graph_ = graph;
  Descriptors& d = *out->d_;
  std::string refused;
  std::vector<const Desc*> ops;
  try {  // a descriptor cuDNN refuses outright (CUDNN_CHECK) is a refusal too, not an error
    ops = nodes(pb, graph, form, d.keep, &refused);
  } catch (const std::exception& e) {
    refused = e.what();
  }
  if (ops.empty()) {
    *why = refused;
    return nullptr;
  }
  const Desc* op_graph = d.keep.own(cb::operation_graph(h, ops, why));
  if (!op_graph) return nullptr;

  // Zeroed scratch for the trial run (the contents do not matter; zeros keep every value finite): the
  // three big tensors, and one block of per-channel slots (each 16-byte aligned, room for f32).
  const size_t e = 2;  // f16 and bf16
  Tensor x = zeroed_bytes(static_cast<size_t>(pb.n * pb.c * pb.h * pb.w) * e);
  Tensor w = zeroed_bytes(static_cast<size_t>(pb.k * pb.c * pb.r * pb.s) * e);
  Tensor y = zeroed_bytes(static_cast<size_t>(pb.n * pb.k * pb.p * pb.q) * e);
  Tensor drelu = graph == ConvBnGraph::kDgradDreluBnWeight ? zeroed_bytes(static_cast<size_t>(pb.n * pb.c * pb.h * pb.w) * e)
                                                           : Tensor();
  const size_t slot = (static_cast<size_t>(std::max(pb.c, pb.k)) * sizeof(float) + 15) / 16 * 16;
  Tensor per_channel = zeroed_bytes(11 * slot);
  auto at = [&](int i) { return reinterpret_cast<float*>(static_cast<char*>(per_channel.raw()) + i * slot); };
  const ConvBnTensors trial{.x = x.raw(), .w = w.raw(), .y = y.raw(), .scale = at(0), .bias = at(1), .sum = at(2),
                            .sqsum = at(3), .mean = at(4), .invstd = at(5), .drelu = drelu.raw(), .dscale = at(6),
                            .dbias = at(7), .eq_dy = at(8), .eq_x = at(9), .eq_bias = at(10)};
  const cb::TrialRun run_once = [&](const Desc& plan, size_t workspace) {
    Tensor ws = zeroed_bytes(workspace);
    run(h, plan, graph, trial, ws.raw());
    CUDA_CHECK(cudaStreamSynchronize(s));
  };
  const bool reads_f32_intermediates = graph != ConvBnGraph::kFpropStats;
  const cb::EngineRules rules{.deterministic = choice.deterministic,
                              .allow_down_convert = reads_f32_intermediates,
                              .max_workspace = choice.max_workspace};
  std::vector<cb::Plan> plans = cb::usable_plans(h, *op_graph, rules, 1, run_once, why);
  if (plans.empty()) return nullptr;
  d.config = plans[0].config;
  d.plan = std::move(plans[0].plan);
  out->workspace_ = plans[0].workspace;
  out->description_ = str("engine ", plans[0].engine, " (", plans[0].notes, "), workspace ", plans[0].workspace, " bytes",
                          graph == ConvBnGraph::kDgradDreluBnWeight
                              ? (form == MeanForm::kSubtract ? ", mean by SUB" : ", mean by ADD -1")
                              : "");
  return out;
}

void ConvBnPlan::execute(cudnnHandle_t h, const ConvBnTensors& t, void* workspace) const {
  run(h, *d_->plan, graph_, t, workspace);
}

}  // namespace fastnn::ops::cudnn_graph
