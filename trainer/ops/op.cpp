#include "trainer/ops/op.h"

#include <algorithm>

namespace fastnn::ops {

namespace {

// `optional`: an undefined tensor is allowed (gradients that are not wanted).
void check_group(const OpKernel& k, const char* group, std::span<const Tensor> got,
                 const std::vector<TensorSpec>& want, bool optional) {
  FASTNN_CHECK(got.size() == want.size(), k.name(), ": ", got.size(), " ", group, " tensors, expected ",
               want.size());
  const Layout own = k.signature().activation_layout;  // kNone: any layout
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& t = got[i];
    if (!t.defined()) {
      FASTNN_CHECK(optional, k.name(), ": ", group, "[", i, "] (", want[i].name, ") is undefined");
      continue;
    }
    FASTNN_CHECK(t.shape() == want[i].shape && t.dtype() == want[i].dtype, k.name(), ": ", group, "[", i,
                 "] (", want[i].name, ") is ", t.describe(), ", expected ", dtype_name(want[i].dtype),
                 shape_str(want[i].shape));
    FASTNN_CHECK(t.device() == k.device(), k.name(), ": ", group, "[", i, "] is on ", device_name(t.device()),
                 ", the kernel on ", device_name(k.device()));
    FASTNN_CHECK(own == Layout::kNone || t.layout() == Layout::kNone || t.layout() == own, k.name(), ": ", group, "[", i,
                 "] is ", layout_name(t.layout()), ", the ", device_name(k.device()), " kernel takes ", layout_name(own));
  }
}

void check_workspace(const OpKernel& k, const Tensor& ws) {
  const size_t need = k.signature().workspace_bytes;
  if (need == 0) return;
  FASTNN_CHECK(ws.defined() && ws.nbytes() >= need && ws.device() == k.device(), k.name(), ": workspace ",
               ws.describe(), " is smaller than ", need, " bytes or on the wrong device");
}

}  // namespace

void OpKernel::forward(const ForwardArgs& a) {
  check_group(*this, "inputs", a.inputs, sig_.inputs, false);
  check_group(*this, "params", a.params, sig_.params, false);
  check_group(*this, "state", a.state, sig_.state, false);
  check_group(*this, "outputs", a.outputs, sig_.outputs, false);
  check_group(*this, "saved", a.saved, sig_.saved, false);
  check_workspace(*this, a.workspace);
  run_forward(a);
}

void OpKernel::backward(const BackwardArgs& a) {
  FASTNN_CHECK(sig_.has_backward, name_, " has no backward");
  check_group(*this, "inputs", a.inputs, sig_.inputs, false);
  check_group(*this, "params", a.params, sig_.params, false);
  check_group(*this, "state", a.state, sig_.state, false);
  check_group(*this, "outputs", a.outputs, sig_.outputs, false);
  check_group(*this, "saved", a.saved, sig_.saved, false);
  check_group(*this, "d_outputs", a.d_outputs, sig_.outputs, false);
  check_group(*this, "d_inputs", a.d_inputs, sig_.inputs, true);
  check_group(*this, "d_params", a.d_params, sig_.params, true);
  for (size_t i = 0; i < a.d_inputs.size(); ++i)
    FASTNN_CHECK(!a.d_inputs[i].defined() || sig_.input_has_grad[i], name_, ": input ", i, " (",
                 sig_.inputs[i].name, ") has no gradient; pass an undefined tensor");
  FASTNN_CHECK(a.accumulate == 0 || sig_.accumulates_input_grads, name_, ": asked to accumulate input gradients");
  FASTNN_CHECK(a.d_inputs.size() >= 64 || (a.accumulate >> a.d_inputs.size()) == 0, name_,
               ": accumulate names an input it does not have");
  check_workspace(*this, a.workspace);
  run_backward(a);
}

void OpKernel::run_backward(const BackwardArgs&) { throw Error(str(name_, " has no backward")); }
void OpKernel::forward_with_channel_sums(const ForwardArgs&, float*) {
  throw Error(str(name_, " cannot write its output's channel sums"));
}
void OpKernel::forward_from_channel_sums(const ForwardArgs&, const float*) {
  throw Error(str(name_, " cannot start from its input's channel sums"));
}

void OpRegistry::add(OpDef def) {
  FASTNN_CHECK(!def.name.empty(), "op without a name");
  FASTNN_CHECK(!ops_.contains(def.name), "op ", def.name, " registered twice");
  FASTNN_CHECK(def.kernels.contains(Device::kCpu), "op ", def.name, " has no CPU kernel");
  FASTNN_CHECK(def.test_cases != nullptr, "op ", def.name, " has no test cases");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

void OpRegistry::add_kernel(std::string_view name, Device device, KernelFactory factory) {
  auto it = ops_.find(name);
  FASTNN_CHECK(it != ops_.end(), "add_kernel: no op named ", name);
  it->second.kernels[device] = std::move(factory);
}

void OpRegistry::add_nhwc_kernel(std::string_view name, Device device, KernelFactory factory) {
  auto it = ops_.find(name);
  FASTNN_CHECK(it != ops_.end(), "add_nhwc_kernel: no op named ", name);
  it->second.nhwc_kernels[device] = std::move(factory);
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::get(std::string_view name) const {
  if (const OpDef* d = find(name)) return *d;
  std::string known;
  for (const auto& [n, d] : ops_) known += str(known.empty() ? "" : ", ", n);
  throw ConfigError(str("unknown op '", name, "' (known: ", known, ")"));
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> v;
  for (const auto& [n, d] : ops_) v.push_back(&d);
  return v;
}

bool OpRegistry::has_kernel(std::string_view name, Device device) const {
  const OpDef* d = find(name);
  return d && d->kernels.contains(device);
}

std::unique_ptr<OpKernel> OpRegistry::create(std::string_view name, Device device, const Attrs& attrs,
                                             std::span<const TensorSpec> inputs) const {
  const OpDef& d = get(name);
  auto it = d.kernels.find(device);
  if (it == d.kernels.end())
    throw ConfigError(str("op ", name, " has no ", device_name(device), " kernel"));
  return it->second(attrs, inputs);
}

std::unique_ptr<OpKernel> OpRegistry::create_nhwc(std::string_view name, Device device, const Attrs& attrs,
                                                  std::span<const TensorSpec> nchw_inputs) const {
  const OpDef& d = get(name);
  auto it = d.nhwc_kernels.find(device);
  if (it == d.nhwc_kernels.end()) return nullptr;
  std::unique_ptr<OpKernel> k = it->second(attrs, nchw_inputs);  // null: not for these attributes
  FASTNN_CHECK(!k || k->signature().activation_layout == Layout::kNHWC, "op ", name, ": its ", device_name(device),
               " NHWC kernel does not declare NHWC activations");
  return k;
}

namespace {
std::string fusion_key(std::string_view first, std::string_view then, Device device) {
  return str(first, "+", then, "@", device_name(device));
}
}  // namespace

// The two ops need not be registered yet (registration order is the ops' own).
void OpRegistry::add_fusion(std::string_view first, std::string_view then, Device device, FusionFactory factory) {
  fusions_[fusion_key(first, then, device)] = std::move(factory);
}

void OpRegistry::add_batch_norm_fold(std::string_view conv_op, Device device, BatchNormFoldFactory factory) {
  folds_[str(conv_op, "@", device_name(device))] = std::move(factory);
}

std::unique_ptr<OpKernel> OpRegistry::create_batch_norm_fold(const BatchNormFold& fold) const {
  if (fold.conv.device() != fold.then.device()) return nullptr;
  auto it = folds_.find(str(fold.conv_op, "@", device_name(fold.conv.device())));
  return it == folds_.end() ? nullptr : it->second(fold);
}

void OpRegistry::add_bf16_input_kernel(std::string_view name, Device device, Bf16InputFactory factory) {
  bf16_inputs_[str(name, "@", device_name(device))] = std::move(factory);
}

bool OpRegistry::has_bf16_input_kernel(std::string_view name, Device device) const {
  return bf16_inputs_.contains(str(name, "@", device_name(device)));
}

std::unique_ptr<OpKernel> OpRegistry::create_bf16_input_kernel(std::string_view name, Device device, const Attrs& attrs,
                                                               std::span<const TensorSpec> nchw_inputs, bool output_bf16) const {
  auto it = bf16_inputs_.find(str(name, "@", device_name(device)));
  if (it == bf16_inputs_.end()) return nullptr;
  std::unique_ptr<OpKernel> k = it->second(attrs, nchw_inputs, output_bf16);
  FASTNN_CHECK(!k || (k->signature().inputs[0].dtype == DType::kBF16 && k->signature().activation_layout == Layout::kNHWC &&
                      (k->signature().outputs[0].dtype == DType::kBF16) == output_bf16),
               "op ", name, ": its ", device_name(device), " bf16-input kernel has other activation types or layout");
  return k;
}

std::unique_ptr<OpKernel> OpRegistry::create_fusion(const OpKernel& first, const OpKernel& then) const {
  if (first.device() != then.device()) return nullptr;
  auto it = fusions_.find(fusion_key(first.name(), then.name(), first.device()));
  return it == fusions_.end() ? nullptr : it->second(first, then);
}

}  // namespace fastnn::ops
