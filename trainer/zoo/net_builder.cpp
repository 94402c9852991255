#include "trainer/zoo/net_builder.h"

#include "core/check.h"

namespace fastnn::zoo {

namespace {

std::vector<int> two(const std::vector<int>& v) { return v.size() == 1 ? std::vector<int>{v[0], v[0]} : v; }

// Output size along one dim (ops/window2d.h): "same" ceil(in / stride), "valid" or explicit pads floor.
int64_t window_out(int64_t in, int k, int stride, int dilation, const std::string& padding, int pad_before,
                   int pad_after) {
  if (padding == "same") return (in + stride - 1) / stride;
  const int64_t eff = int64_t{k - 1} * dilation + 1;
  return (in + pad_before + pad_after - eff) / stride + 1;
}

// [top, bottom, left, right] from 1, 2 or 4 pads.
std::vector<int> four(const std::vector<int>& p) {
  if (p.empty()) return {0, 0, 0, 0};
  if (p.size() == 1) return {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) return {p[0], p[0], p[1], p[1]};
  return p;
}

Dims window_dims(const Dims& in, int64_t channels, const std::vector<int>& kernel, const std::vector<int>& stride,
                 const std::string& padding, const std::vector<int>& pad) {
  FASTNN_CHECK(in.size() == 3, "zoo: a window op on a flat tensor");
  const std::vector<int> k = two(kernel), s = two(stride), p = four(pad);
  return {channels, window_out(in[1], k[0], s[0], 1, padding, p[0], p[1]),
          window_out(in[2], k[1], s[1], 1, padding, p[2], p[3])};
}

void set_ints(google::protobuf::RepeatedField<int32_t>* f, const std::vector<int>& v) {
  for (int x : v) f->Add(x);
}

}  // namespace

NetBuilder::NetBuilder(std::string net_scope, const Dims& input) {
  net_.set_name(net_scope);
  scopes_.push_back(std::move(net_scope));
  FASTNN_CHECK(input.size() == 3, "zoo: input dims are [C, H, W]");
  net_.mutable_input()->set_channels(static_cast<int32_t>(input[0]));
  net_.mutable_input()->set_height(static_cast<int32_t>(input[1]));
  net_.mutable_input()->set_width(static_cast<int32_t>(input[2]));
  dims_["data"] = input;
}

NetBuilder::Scope::Scope(NetBuilder& b, const std::string& name) : b_(b) { b_.scopes_.push_back(name); }
NetBuilder::Scope::~Scope() { b_.scopes_.pop_back(); }

std::string NetBuilder::full_name(const std::string& local) const {
  std::string s;
  for (const std::string& p : scopes_)
    if (!p.empty()) s += p + "/";
  return s + local;
}

const Dims& NetBuilder::dims(const std::string& tensor) const {
  auto it = dims_.find(tensor);
  FASTNN_CHECK(it != dims_.end(), "zoo: no tensor named ", tensor);
  return it->second;
}

LayerDef& NetBuilder::add_layer(const std::string& name, const std::vector<std::string>& inputs) {
  LayerDef* l = net_.add_layers();
  l->set_name(name);
  for (const std::string& in : inputs) {
    dims(in);  // exists
    l->add_inputs(in);
  }
  return *l;
}

LayerDef& NetBuilder::add_layer(const std::string& name, std::initializer_list<std::string> inputs) {
  return add_layer(name, std::vector<std::string>(inputs));
}

std::string NetBuilder::conv2d(const std::string& in, const std::string& name, const ConvArgs& a) {
  const ConvDefaults& d = conv_defaults;
  const bool normalize = a.normalize.value_or(d.batch_norm.has_value());
  FASTNN_CHECK(!normalize || d.batch_norm, "zoo: conv2d with a normalizer but no batch_norm defaults");
  const std::string full = full_name(name);
  LayerDef& l = add_layer(full, {in});
  ConvLayer* c = l.mutable_conv();
  c->set_filters(a.filters);
  set_ints(c->mutable_kernel(), a.kernel);
  if (a.stride != std::vector<int>{1}) set_ints(c->mutable_stride(), a.stride);
  const std::string padding = a.pad.empty() ? a.padding.value_or(d.padding) : "valid";
  c->set_padding(padding);
  set_ints(c->mutable_pad(), a.pad);
  const bool bias = d.bias.value_or(!normalize);
  c->set_bias(bias);
  *c->mutable_weight_init() = a.weight_init.value_or(d.weight_init);
  if (bias) *c->mutable_bias_init() = d.bias_init;
  c->set_weight_decay(d.weight_decay);
  c->set_bias_weight_decay(d.bias_weight_decay);
  dims_[full] = window_dims(dims(in), a.filters, a.kernel, a.stride, padding, a.pad);
  return normalized_and_activated(full, name, normalize, a.relu.value_or(d.relu));
}

std::string NetBuilder::depthwise_conv2d(const std::string& in, const std::string& name, const DepthwiseArgs& a) {
  const ConvDefaults& d = conv_defaults;
  const bool normalize = d.batch_norm.has_value();
  const std::string full = full_name(name);
  LayerDef& l = add_layer(full, {in});
  DepthwiseConvLayer* c = l.mutable_depthwise_conv();
  set_ints(c->mutable_kernel(), a.kernel);
  if (a.stride != std::vector<int>{1}) set_ints(c->mutable_stride(), a.stride);
  const std::string padding = a.padding.value_or(d.padding);
  c->set_padding(padding);
  c->set_multiplier(a.multiplier);
  const bool bias = d.bias.value_or(!normalize);
  c->set_bias(bias);
  *c->mutable_weight_init() = d.weight_init;
  if (bias) *c->mutable_bias_init() = d.bias_init;
  c->set_weight_decay(a.weight_decay);
  c->set_bias_weight_decay(d.bias_weight_decay);
  dims_[full] = window_dims(dims(in), dims(in).at(0) * a.multiplier, a.kernel, a.stride, padding, {});
  return normalized_and_activated(full, name, normalize, a.relu.value_or(d.relu));
}

std::string NetBuilder::separable_conv2d(const std::string& in, const std::string& name, const SeparableArgs& a) {
  const ConvDefaults& d = conv_defaults;
  const bool normalize = a.normalize.value_or(d.batch_norm.has_value());
  FASTNN_CHECK(!normalize || d.batch_norm, "zoo: separable_conv2d with a normalizer but no batch_norm defaults");
  const std::string full = full_name(name);
  const std::string padding = a.padding.value_or(d.padding);
  const InitSpec init = a.weight_init.value_or(d.weight_init);
  std::string dw;
  {
    auto s = scope(name);
    dw = full_name("depthwise");
    LayerDef& l = add_layer(dw, {in});
    l.set_param_scope(full);
    DepthwiseConvLayer* c = l.mutable_depthwise_conv();
    set_ints(c->mutable_kernel(), a.kernel);
    if (a.stride != std::vector<int>{1}) set_ints(c->mutable_stride(), a.stride);
    c->set_padding(padding);
    c->set_multiplier(a.multiplier);
    c->set_bias(false);
    *c->mutable_weight_init() = init;
    c->set_weight_decay(a.weight_decay.value_or(d.weight_decay));
    dims_[dw] = window_dims(dims(in), dims(in).at(0) * a.multiplier, a.kernel, a.stride, padding, {});
  }
  LayerDef& l = add_layer(full, {dw});
  ConvLayer* c = l.mutable_conv();
  c->set_filters(a.filters);
  c->add_kernel(1);
  c->set_padding("valid");
  const bool bias = d.bias.value_or(!normalize);
  c->set_bias(bias);
  c->set_weights_name("pointwise_weights");
  *c->mutable_weight_init() = init;
  if (bias) *c->mutable_bias_init() = d.bias_init;
  c->set_weight_decay(a.weight_decay.value_or(d.weight_decay));
  c->set_bias_weight_decay(d.bias_weight_decay);
  dims_[full] = {a.filters, dims(dw)[1], dims(dw)[2]};
  return normalized_and_activated(full, name, normalize, a.relu.value_or(d.relu));
}

// TF-slim's normalizer_fn and activation_fn after a convolution, in the convolution's scope.
std::string NetBuilder::normalized_and_activated(const std::string& conv, const std::string& name, bool normalize,
                                                 bool activate) {
  const ConvDefaults& d = conv_defaults;
  auto s = scope(name);
  std::string out = conv;
  if (normalize) out = batch_norm(out, "BatchNorm", *d.batch_norm);
  if (activate) out = d.relu6 ? relu6(out, "Relu6") : relu(out, "Relu");
  return out;
}

std::string NetBuilder::relu6(const std::string& in, const std::string& name) {
  const std::string full = full_name(name);
  add_layer(full, {in}).mutable_relu6();
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::batch_norm(const std::string& in, const std::string& name, const BatchNormLayer& bn) {
  const std::string full = full_name(name);
  *add_layer(full, {in}).mutable_batch_norm() = bn;
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::relu(const std::string& in, const std::string& name) {
  const std::string full = full_name(name);
  add_layer(full, {in}).mutable_relu();
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::tanh(const std::string& in, const std::string& name, float outer, float inner) {
  const std::string full = full_name(name);
  TanhLayer* t = add_layer(full, {in}).mutable_tanh();
  t->set_outer(outer);
  t->set_inner(inner);
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::pool(const std::string& in, const std::string& name, bool avg, std::vector<int> kernel,
                             std::vector<int> stride, std::optional<std::string> padding, const std::vector<int>& pad) {
  const std::string full = full_name(name);
  PoolLayer* p = add_layer(full, {in}).mutable_pool();
  p->set_kind(avg ? PoolLayer::AVG : PoolLayer::MAX);
  set_ints(p->mutable_kernel(), kernel);
  set_ints(p->mutable_stride(), stride);
  const std::string mode = pad.empty() ? padding.value_or(pool_padding) : "valid";
  p->set_padding(mode);
  set_ints(p->mutable_pad(), pad);
  dims_[full] = window_dims(dims(in), dims(in)[0], kernel, stride, mode, pad);
  return full;
}

std::string NetBuilder::max_pool2d(const std::string& in, const std::string& name, std::vector<int> kernel,
                                   std::vector<int> stride, std::optional<std::string> padding, std::vector<int> pad) {
  return pool(in, name, false, std::move(kernel), std::move(stride), std::move(padding), pad);
}

std::string NetBuilder::avg_pool2d(const std::string& in, const std::string& name, std::vector<int> kernel,
                                   std::vector<int> stride, std::optional<std::string> padding) {
  return pool(in, name, true, std::move(kernel), std::move(stride), std::move(padding), {});
}

std::string NetBuilder::global_avg_pool(const std::string& in, const std::string& name) {
  const std::string full = full_name(name);
  add_layer(full, {in}).mutable_global_avg_pool();
  dims_[full] = {dims(in)[0]};
  return full;
}

std::string NetBuilder::fully_connected(const std::string& in, const std::string& name, const FcArgs& a) {
  const FcDefaults& d = fc_defaults;
  const std::string full = full_name(name);
  FullyConnectedLayer* f = add_layer(full, {in}).mutable_fully_connected();
  f->set_units(a.units);
  *f->mutable_weight_init() = a.weight_init.value_or(d.weight_init);
  *f->mutable_bias_init() = a.bias_init.value_or(d.bias_init);
  f->set_weight_decay(a.weight_decay.value_or(d.weight_decay));
  f->set_bias_weight_decay(d.bias_weight_decay);
  if (a.tf_conv) f->set_tf_conv(true);
  dims_[full] = {a.units};
  if (!a.relu.value_or(d.relu)) return full;
  auto s = scope(name);
  return relu(full, "Relu");
}

std::string NetBuilder::dropout(const std::string& in, const std::string& name, float keep_prob) {
  const std::string full = full_name(name);
  add_layer(full, {in}).mutable_dropout()->set_rate(1.0f - keep_prob);
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::add(const std::vector<std::string>& ins, const std::string& name) {
  const std::string full = full_name(name);
  add_layer(full, ins).mutable_add();
  dims_[full] = dims(ins.at(0));
  return full;
}

std::string NetBuilder::concat(const std::vector<std::string>& ins, const std::string& name) {
  const std::string full = full_name(name);
  add_layer(full, ins).mutable_concat();
  Dims d = dims(ins.at(0));
  for (size_t i = 1; i < ins.size(); ++i) d[0] += dims(ins[i])[0];
  dims_[full] = d;
  return full;
}

std::string NetBuilder::scale(const std::string& in, const std::string& name, float s) {
  const std::string full = full_name(name);
  add_layer(full, {in}).mutable_scale()->set_scale(s);
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::channel_pad(const std::string& in, const std::string& name, int before, int after) {
  const std::string full = full_name(name);
  ChannelPadLayer* p = add_layer(full, {in}).mutable_channel_pad();
  p->set_before(before);
  p->set_after(after);
  Dims d = dims(in);
  d[0] += before + after;
  dims_[full] = d;
  return full;
}

std::string NetBuilder::lrn(const std::string& in, const std::string& name, int depth_radius, float bias,
                            float alpha, float beta) {
  const std::string full = full_name(name);
  LrnLayer* l = add_layer(full, {in}).mutable_lrn();
  l->set_depth_radius(depth_radius);
  l->set_bias(bias);
  l->set_alpha(alpha);
  l->set_beta(beta);
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::drop_path(const std::string& in, const std::string& name, const DropPathLayer& schedule) {
  const std::string full = full_name(name);
  *add_layer(full, {in}).mutable_drop_path() = schedule;
  dims_[full] = dims(in);
  return full;
}

std::string NetBuilder::spatial_shift(const std::string& in, const std::string& name, int dy, int dx) {
  const std::string full = full_name(name);
  SpatialShiftLayer* s = add_layer(full, {in}).mutable_spatial_shift();
  s->set_dy(dy);
  s->set_dx(dx);
  dims_[full] = dims(in);
  return full;
}

NetDef NetBuilder::finish(const std::string& logits, const std::string& aux_logits, float aux_loss_weight) {
  net_.set_logits(logits);
  if (!aux_logits.empty()) {
    net_.set_aux_logits(aux_logits);
    net_.set_aux_loss_weight(aux_loss_weight);
  }
  return net_;
}

InitSpec truncated_normal(double stddev) {
  InitSpec s;
  s.set_kind(InitSpec::TRUNCATED_NORMAL);
  s.set_stddev(stddev);
  return s;
}

InitSpec uniform_init(double low, double high) {
  InitSpec s;
  s.set_kind(InitSpec::UNIFORM);
  s.set_low(low);
  s.set_high(high);
  return s;
}

InitSpec constant_init(double value) {
  InitSpec s;
  s.set_kind(InitSpec::CONSTANT);
  s.set_value(value);
  return s;
}

InitSpec zeros_init() {
  InitSpec s;
  s.set_kind(InitSpec::ZEROS);
  return s;
}

InitSpec glorot_uniform() {
  InitSpec s;
  s.set_kind(InitSpec::GLOROT_UNIFORM);
  return s;
}

InitSpec he_normal() {
  InitSpec s;
  s.set_kind(InitSpec::HE_NORMAL);
  return s;
}

InitSpec variance_scaling() {
  InitSpec s;
  s.set_kind(InitSpec::VARIANCE_SCALING);
  s.set_factor(2.0);
  s.set_mode(InitSpec::FAN_IN);
  s.set_uniform(false);
  return s;
}

BatchNormLayer batch_norm_params(float momentum, float epsilon, bool scale) {
  BatchNormLayer bn;
  bn.set_momentum(momentum);
  bn.set_epsilon(epsilon);
  bn.set_scale(scale);
  return bn;
}

}  // namespace fastnn::zoo
