#include "trainer/graph/layers.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/check.h"

namespace fastnn::graph {

namespace {

using ops::Ints;

Ints ints(const google::protobuf::RepeatedField<int32_t>& v) { return Ints(v.begin(), v.end()); }

[[noreturn]] void fail(const LayerDef& l, const std::string& what) {
  throw ConfigError(str("layer '", l.name(), "': ", what));
}

// kernel / stride / dilation / padding attributes shared by conv and pool.
void window_attrs(const LayerDef& l, ops::Attrs& a, const google::protobuf::RepeatedField<int32_t>& kernel,
                  const google::protobuf::RepeatedField<int32_t>& stride, const std::string& padding,
                  const google::protobuf::RepeatedField<int32_t>& pad) {
  if (kernel.empty()) fail(l, "needs a kernel size (kernel: k or kernel: [kh, kw])");
  if (kernel.size() > 2 || stride.size() > 2) fail(l, "kernel and stride take 1 or 2 values");
  a.set("kernel", ints(kernel));
  if (!stride.empty()) a.set("stride", ints(stride));
  if (!pad.empty()) {
    if (padding == "same") fail(l, "give either padding: \"same\" or explicit pad values, not both");
    if (pad.size() != 1 && pad.size() != 2 && pad.size() != 4) fail(l, "pad takes 1, 2 or 4 values");
    a.set("padding", ints(pad));
  } else {
    a.set("padding", padding);
  }
}

void weight_rules(LoweredLayer& out, const LayerDef& l, const InitSpec& w_init, const InitSpec& b_init,
                  bool w_decay, bool b_decay, const std::string& weights_name = "weights") {
  out.params["weight"] =
      ParamRule{weights_name, true, to_init_rule(w_init, l.name() + "/" + weights_name), w_decay};
  out.params["bias"] = ParamRule{"biases", true, to_init_rule(b_init, l.name() + "/biases"), b_decay};
}

}  // namespace

double widen(float f) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf - 1, f);
  *res.ptr = '\0';
  return std::strtod(buf, nullptr);
}

std::optional<ops::InitRule> to_init_rule(const InitSpec& s, const std::string& where) {
  using K = ops::InitRule::Kind;
  ops::InitRule r;
  switch (s.kind()) {
    case InitSpec::DEFAULT: return std::nullopt;
    case InitSpec::ZEROS: r.kind = K::kZeros; break;
    case InitSpec::CONSTANT: r.kind = K::kConstant; break;
    case InitSpec::UNIFORM: r.kind = K::kUniform; break;
    case InitSpec::NORMAL: r.kind = K::kNormal; break;
    case InitSpec::TRUNCATED_NORMAL: r.kind = K::kTruncatedNormal; break;
    case InitSpec::HE_NORMAL: r.kind = K::kHeNormal; break;
    case InitSpec::GLOROT_UNIFORM: r.kind = K::kGlorotUniform; break;
    case InitSpec::VARIANCE_SCALING: r.kind = K::kVarianceScaling; break;
  }
  r.value = s.value();
  r.low = s.low();
  r.high = s.high();
  r.mean = s.mean();
  r.stddev = s.stddev();
  r.factor = s.factor();
  r.mode = s.mode() == InitSpec::FAN_OUT  ? ops::InitRule::Mode::kFanOut
           : s.mode() == InitSpec::FAN_AVG ? ops::InitRule::Mode::kFanAvg
                                          : ops::InitRule::Mode::kFanIn;
  r.uniform = s.uniform();
  if (!std::isfinite(r.value) || !std::isfinite(r.mean) || !(r.stddev >= 0) || !std::isfinite(r.stddev) ||
      !(r.low <= r.high) || !std::isfinite(r.low) || !std::isfinite(r.high) || !(r.factor > 0))
    throw ConfigError(str(where, ": bad init (", s.ShortDebugString(),
                          "): needs finite values, stddev >= 0, low <= high, factor > 0"));
  return r;
}

LoweredLayer lower_layer(const LayerDef& l) {
  LoweredLayer out;
  ops::Attrs& a = out.attrs;
  switch (l.layer_case()) {
    case LayerDef::kConv: {
      const ConvLayer& c = l.conv();
      out.type = "conv";
      out.op = "conv2d";
      if (!c.has_filters()) fail(l, "conv needs filters");
      a.set("filters", int64_t{c.filters()});
      window_attrs(l, a, c.kernel(), c.stride(), c.padding(), c.pad());
      if (c.dilation_size() > 2) fail(l, "dilation takes 1 or 2 values");
      if (!c.dilation().empty()) a.set("dilation", ints(c.dilation()));
      a.set("groups", int64_t{c.groups()});
      a.set("bias", c.bias());
      for (char ch : c.weights_name())
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') fail(l, "weights_name takes [A-Za-z0-9_]");
      weight_rules(out, l, c.weight_init(), c.bias_init(), c.weight_decay(), c.bias_weight_decay(),
                   c.weights_name().empty() ? "weights" : c.weights_name());
      break;
    }
    case LayerDef::kDepthwiseConv: {
      const DepthwiseConvLayer& c = l.depthwise_conv();
      out.type = "depthwise_conv";
      out.op = "depthwise_conv2d";
      window_attrs(l, a, c.kernel(), c.stride(), c.padding(), c.pad());
      if (c.dilation_size() > 2) fail(l, "dilation takes 1 or 2 values");
      if (!c.dilation().empty()) a.set("dilation", ints(c.dilation()));
      a.set("multiplier", int64_t{c.multiplier()});
      a.set("bias", c.bias());
      // TF-slim's separable_conv2d names its depthwise filter "depthwise_weights".
      out.params["weight"] = ParamRule{"depthwise_weights", true,
                                       to_init_rule(c.weight_init(), l.name() + "/depthwise_weights"),
                                       c.weight_decay()};
      out.params["bias"] = ParamRule{"biases", true, to_init_rule(c.bias_init(), l.name() + "/biases"),
                                     c.bias_weight_decay()};
      break;
    }
    case LayerDef::kBatchNorm: {
      const BatchNormLayer& b = l.batch_norm();
      out.type = "batch_norm";
      out.op = "batch_norm";
      if (!(b.momentum() >= 0 && b.momentum() <= 1)) fail(l, str("momentum must be in [0, 1], got ", b.momentum()));
      if (!(b.epsilon() > 0)) fail(l, str("epsilon must be > 0, got ", b.epsilon()));
      a.set("momentum", widen(b.momentum()));
      a.set("epsilon", widen(b.epsilon()));
      out.params["gamma"] = ParamRule{"gamma", b.scale(), std::nullopt, false};
      out.params["beta"] = ParamRule{"beta", b.center(), std::nullopt, false};
      out.state["running_mean"] = "moving_mean";
      out.state["running_var"] = "moving_variance";
      break;
    }
    case LayerDef::kRelu:
      out.type = "relu";
      out.op = "relu";
      break;
    case LayerDef::kRelu6:
      out.type = "relu6";
      out.op = "relu6";
      break;
    case LayerDef::kHardSwish:
      out.type = "hard_swish";
      out.op = "hard_swish";
      break;
    case LayerDef::kTanh:
      out.type = "tanh";
      out.op = "tanh";
      a.set("outer", widen(l.tanh().outer()));
      a.set("inner", widen(l.tanh().inner()));
      break;
    case LayerDef::kPool: {
      const PoolLayer& p = l.pool();
      out.type = "pool";
      out.op = p.kind() == PoolLayer::AVG ? "avg_pool2d" : "max_pool2d";
      window_attrs(l, a, p.kernel(), p.stride(), p.padding(), p.pad());
      if (p.kind() == PoolLayer::AVG) a.set("count_include_pad", p.count_include_pad());
      else if (p.count_include_pad()) fail(l, "count_include_pad applies to average pooling only");
      break;
    }
    case LayerDef::kGlobalAvgPool:
      out.type = "global_avg_pool";
      out.op = "global_avg_pool";
      break;
    case LayerDef::kFullyConnected: {
      const FullyConnectedLayer& f = l.fully_connected();
      out.type = "fully_connected";
      out.op = "fully_connected";
      if (!f.has_units()) fail(l, "fully_connected needs units");
      a.set("units", int64_t{f.units()});
      a.set("bias", f.bias());
      weight_rules(out, l, f.weight_init(), f.bias_init(), f.weight_decay(), f.bias_weight_decay());
      break;
    }
    case LayerDef::kDropout:
      out.type = "dropout";
      out.op = "dropout";
      a.set("rate", widen(l.dropout().rate()));
      break;
    case LayerDef::kDropPath: {
      const DropPathLayer& d = l.drop_path();
      out.type = "drop_path";
      out.op = "drop_path";
      a.set("keep_prob", widen(d.keep_prob()));
      a.set("cell_index", int64_t{d.cell_index()});
      a.set("total_cells", int64_t{d.total_cells()});
      a.set("total_steps", d.total_steps());
      break;
    }
    case LayerDef::kSpatialShift:
      out.type = "spatial_shift";
      out.op = "spatial_shift";
      a.set("dy", int64_t{l.spatial_shift().dy()});
      a.set("dx", int64_t{l.spatial_shift().dx()});
      break;
    case LayerDef::kAdd:
      out.type = "add";
      out.op = "add";
      out.min_inputs = 2;
      out.max_inputs = 16;
      break;
    case LayerDef::kConcat:
      out.type = "concat";
      out.op = "concat";
      out.max_inputs = 64;
      break;
    case LayerDef::kScale:
      out.type = "scale";
      out.op = "scale";
      a.set("scale", widen(l.scale().scale()));
      break;
    case LayerDef::kChannelPad:
      out.type = "channel_pad";
      out.op = "channel_pad";
      a.set("before", int64_t{l.channel_pad().before()});
      a.set("after", int64_t{l.channel_pad().after()});
      break;
    case LayerDef::kLrn: {
      const LrnLayer& r = l.lrn();
      out.type = "lrn";
      out.op = "lrn";
      a.set("depth_radius", int64_t{r.depth_radius()});
      a.set("bias", widen(r.bias()));
      a.set("alpha", widen(r.alpha()));
      a.set("beta", widen(r.beta()));
      break;
    }
    case LayerDef::LAYER_NOT_SET:
      fail(l, "no layer type set (one of conv, batch_norm, relu, tanh, pool, global_avg_pool, fully_connected, "
              "dropout, add, concat, scale, channel_pad, lrn, relu6, depthwise_conv, drop_path, spatial_shift, hard_swish)");
  }
  return out;
}

}  // namespace fastnn::graph
