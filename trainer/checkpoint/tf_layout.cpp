#include "trainer/checkpoint/tf_layout.h"

#include <map>

#include "core/check.h"
#include "trainer/graph/net_plan.h"

namespace fastnn::checkpoint {
namespace {

// For every element of the fastnn tensor: its index in TF-slim's layout. `visit(fastnn, tf)`.
template <typename Visit>
void for_each_pair(const TfVariable& v, Visit visit) {
  const auto& s = v.shape;
  switch (v.layout) {
    case TfLayout::kSame: {
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      for (int64_t i = 0; i < n; ++i) visit(i, i);
      return;
    }
    case TfLayout::kConv: {  // [K, C, R, S] <- [R, S, C, K]
      const int64_t K = s[0], C = s[1], R = s[2], S = s[3];
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t r = 0; r < R; ++r)
            for (int64_t x = 0; x < S; ++x) visit(((k * C + c) * R + r) * S + x, ((r * S + x) * C + c) * K + k);
      return;
    }
    case TfLayout::kDepthwise: {  // [C*M, 1, R, S] <- [R, S, C, M]
      const int64_t C = v.in_channels, M = s[0] / C, R = s[2], S = s[3];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t r = 0; r < R; ++r)
            for (int64_t x = 0; x < S; ++x) visit(((c * M + m) * R + r) * S + x, ((r * S + x) * C + c) * M + m);
      return;
    }
    case TfLayout::kFullyConnected: {  // [K, C*H*W] <- [H, W, C, K]
      const int64_t K = s[0], C = v.in_channels, H = v.in_height, W = v.in_width;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) visit(k * C * H * W + (c * H + h) * W + w, ((h * W + w) * C + c) * K + k);
      return;
    }
  }
}

}  // namespace

std::vector<int64_t> TfVariable::tf_shape() const {
  switch (layout) {
    case TfLayout::kSame: return shape;
    case TfLayout::kConv: return {shape[2], shape[3], shape[1], shape[0]};
    case TfLayout::kDepthwise: return {shape[2], shape[3], in_channels, shape[0] / in_channels};
    case TfLayout::kFullyConnected:
      if (tf_conv) return {in_height, in_width, in_channels, shape[0]};
      return {in_height * in_width * in_channels, shape[0]};
  }
  return shape;
}

bool TfVariable::accepts_tf_shape(std::span<const int64_t> s) const {
  if (layout != TfLayout::kFullyConnected) {
    const std::vector<int64_t> want = tf_shape();
    return std::equal(s.begin(), s.end(), want.begin(), want.end());
  }
  const int64_t K = shape[0];
  return (s.size() == 2 && s[0] == in_height * in_width * in_channels && s[1] == K) ||
         (s.size() == 4 && s[0] == in_height && s[1] == in_width && s[2] == in_channels && s[3] == K);
}

std::vector<TfVariable> tf_variables(const NetDef& net) {
  const graph::NetPlan plan = graph::NetPlan::make(net, {.batch_size = 1});
  std::map<std::string, const LayerDef*> layers;
  for (const LayerDef& l : net.layers()) layers[l.name()] = &l;
  std::vector<TfVariable> params, state;
  for (const graph::PlanNode& node : plan.nodes()) {
    const auto& sig = node.kernel->signature();
    for (size_t i = 0; i < node.params.size(); ++i) {
      const graph::PlannedTensor& p = node.params[i];
      if (!p.trainable) continue;  // a fixed constant (gamma without scale): neither trained nor saved
      TfVariable v{p.name, p.spec.shape};
      if (sig.params[i].name == "weight") {
        const Shape& in = node.inputs.at(0) == graph::kDataInput
                              ? plan.input_shape()
                              : plan.nodes()[static_cast<size_t>(node.inputs[0])].output_shape;
        if (node.op == "conv2d") {
          v.layout = TfLayout::kConv;
        } else if (node.op == "depthwise_conv2d") {
          v.layout = TfLayout::kDepthwise;
          v.in_channels = in.at(1);
        } else if (node.op == "fully_connected") {
          v.layout = TfLayout::kFullyConnected;
          v.tf_conv = layers.at(node.name)->fully_connected().tf_conv();
          v.in_channels = in.at(1);
          if (in.size() == 4) v.in_height = in[2], v.in_width = in[3];
        }
        FASTNN_CHECK(v.layout == TfLayout::kSame || v.shape.size() == (v.layout == TfLayout::kFullyConnected ? 2u : 4u),
                     "tf_variables: ", v.name, " of ", node.op, " has shape rank ", v.shape.size());
      }
      params.push_back(std::move(v));
    }
    for (const graph::PlannedTensor& s : node.state) {
      TfVariable v{s.name, s.spec.shape};
      v.trainable = false;
      state.push_back(std::move(v));
    }
  }
  params.insert(params.end(), state.begin(), state.end());
  return params;
}

void tf_to_fastnn(const TfVariable& v, const float* src, float* dst) {
  for_each_pair(v, [&](int64_t f, int64_t t) { dst[f] = src[t]; });
}

void fastnn_to_tf(const TfVariable& v, const float* src, float* dst) {
  for_each_pair(v, [&](int64_t f, int64_t t) { dst[t] = src[f]; });
}

}  // namespace fastnn::checkpoint
