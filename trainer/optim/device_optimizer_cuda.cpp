#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string_view>

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/cuda/storage_types.h"
#include "trainer/optim/device_optimizer.h"
#include "trainer/optim/rule_dispatch.h"
#include "trainer/optim/tensor_chunks.h"
#include "trainer/optim/update_kernels.h"

namespace fastnn {

using optim::gpu::StepControl;

namespace {

// The control block's host image as bytes.
Tensor control_bytes(const StepControl& c) {
  Tensor host = Tensor::empty({static_cast<int64_t>(sizeof(StepControl))}, DType::kU8);
  std::memcpy(host.raw(), &c, sizeof c);
  return host;
}

StepControl read_control(const Tensor& device) {
  StepControl c;
  std::memcpy(&c, cuda::to_host(device).raw(), sizeof c);  // waits for the current stream
  return c;
}

// Into the same device buffer (its address stays what the launches were given).
void write_control(Tensor& device, const StepControl& c) {
  const Tensor host = control_bytes(c);
  cuda::copy_async(device, host);
  cuda::synchronize();  // `host` dies here
}

template <typename Fn>
void with_storage_type(DType dt, Fn&& fn) {
  cuda::with_storage_type(dt, "device optimizer", std::forward<Fn>(fn));
}

}  // namespace

struct DeviceOptimizer::Impl {
  Tensor table;     // TensorChunk[chunks] on the device
  int64_t chunks = 0;
  bool any_prepare = false;  // some chunk has work in prepare()
  bool stats = false;        // prepare() takes the gradient statistics (clipping or loss scaling)
  Tensor partials;  // 2 doubles per chunk
  Tensor control;   // one StepControl
};

bool DeviceOptimizer::supports(const std::string& n) {
  for (const optim::OptimizerTraits& t : optim::optimizer_catalog())
    if (t.name == n) return t.on_device;
  return false;
}

DeviceOptimizer::DeviceOptimizer(const OptimizerOptions& o, std::vector<DeviceParam> params,
                                 const DeviceStepOptions& step_options)
    : name_(o.optimizer), o_(o), step_options_(step_options), params_(std::move(params)) {
  if (!supports(name_))
    throw ConfigError(str("optimizer \"", name_, "\" is not a FastNN optimizer"));
  std::set<std::string> names;
  for (const DeviceParam& p : params_) {
    FASTNN_CHECK(names.insert(p.name).second, "device optimizer: parameter '", p.name, "' given twice");
    FASTNN_CHECK(p.count == 0 || (p.master && p.grad), "device optimizer: parameter '", p.name, "' without buffers");
  }
  // The CPU optimizers' slots, in their order and with their initial values (trainer/optim/optimizers.h).
  for (const auto& [slot_name, init] : optim::slot_inits(o)) {
    Slot slot{slot_name, {}};
    for (const DeviceParam& p : params_) {
      const int64_t n = std::max<int64_t>(p.count, 1);
      if (init == 0.0f && !std::signbit(init)) {
        Tensor t = Tensor::empty({n}, DType::kF32, Device::kCuda);
        cuda::fill_bytes(t, 0);
        slot.data.push_back(t);
      } else {  // set-up only: one synchronous copy per parameter
        const std::vector<float> host(static_cast<size_t>(n), init);
        slot.data.push_back(cuda::to_device(Tensor::from<float>({n}, std::span<const float>(host))));
      }
    }
    slots_.push_back(std::move(slot));
  }
  impl_ = std::make_unique<Impl>();
  const DeviceStepOptions& so = step_options_;
  std::vector<optim::ChunkSource> sources;
  for (size_t i = 0; i < params_.size(); ++i) {
    const DeviceParam& p = params_[i];
    const bool prepare = p.source && (p.source != p.grad || p.weight_decay != 0.0f || so.loss_scaling);
    FASTNN_CHECK(p.source || p.weight_decay == 0.0f, "device optimizer: parameter '", p.name,
                 "' has weight decay but no gradient to prepare it from");
    impl_->any_prepare = impl_->any_prepare || prepare;
    const bool f32 = p.dtype == DType::kF32 || !p.source;
    FASTNN_CHECK(f32 || p.dtype == so.compute, "device optimizer: parameter '", p.name, "' is ", dtype_name(p.dtype),
                 " in a ", dtype_name(so.compute), " run");
    FASTNN_CHECK(!(f32 && so.compute != DType::kF32 && p.value), "device optimizer: f32 parameter '", p.name,
                 "' with a compute-dtype copy");
    const size_t elem = f32 ? sizeof(float) : dtype_size(so.compute);
    sources.push_back({.master = p.master, .grad32 = p.grad, .grad = prepare ? p.source : p.grad, .value = p.value,
                       .slot0 = slots_.size() > 0 ? slots_[0].data[i].data<float>() : nullptr,
                       .slot1 = slots_.size() > 1 ? slots_[1].data[i].data<float>() : nullptr, .count = p.count,
                       .weight_decay = p.weight_decay, .decay = p.decay, .prepare = prepare,
                       .grad_f32 = f32 && so.compute != DType::kF32, .grad_bytes = elem, .value_bytes = elem});
  }
  const std::vector<optim::TensorChunk> table = optim::plan_chunks(sources, optim::kDefaultChunkElements);
  impl_->chunks = static_cast<int64_t>(table.size());
  Tensor host_table = Tensor::empty({static_cast<int64_t>(std::max<size_t>(1, table.size() * sizeof(optim::TensorChunk)))},
                                    DType::kU8);
  if (!table.empty()) std::memcpy(host_table.raw(), table.data(), table.size() * sizeof(optim::TensorChunk));
  impl_->table = cuda::to_device(host_table);
  impl_->stats = so.max_gradient_norm > 0 || so.loss_scaling;
  impl_->partials = Tensor::empty({static_cast<int64_t>(optim::gpu::chunk_partials_bytes(impl_->chunks))}, DType::kU8,
                                  Device::kCuda);
  StepControl c;
  c.scaler = so.loss_scaling ? so.scaler_state : optim::rule::ScalerState{};
  c.inv_scale = static_cast<float>(1.0 / c.scaler.scale);
  c.beta1_power = static_cast<float>(o.adam_beta1);
  c.beta2_power = static_cast<float>(o.adam_beta2);
  impl_->control = cuda::to_device(control_bytes(c));
  cuda::synchronize();  // the host images above die here
}

DeviceOptimizer::~DeviceOptimizer() = default;

const void* DeviceOptimizer::control() const { return impl_->control.raw(); }

void DeviceOptimizer::prepare(void* stream) {
  cudaStream_t s = cuda::stream_or_current(stream);
  with_storage_type(step_options_.compute, [&](auto t) {
    using G = decltype(t);
    optim::gpu::prepare_chunks<G>(static_cast<const optim::TensorChunk*>(impl_->table.raw()), impl_->chunks,
                                   static_cast<const StepControl*>(impl_->control.raw()), impl_->any_prepare,
                                   impl_->stats, static_cast<double*>(impl_->partials.raw()), s);
  });
}

void DeviceOptimizer::check_learning_rate(float lr) const {
  // The proximal step divides by lr; TF would silently write inf/NaN into the weights (as the CPU's).
  if (name_ == "ftrl" && !(lr > 0.0f)) throw Error(str("ftrl needs a learning rate > 0, got ", lr));
}

void DeviceOptimizer::decide(float lr, void* stream) {
  check_learning_rate(lr);
  launch_decide(lr, nullptr, stream);
}

void DeviceOptimizer::decide(const float* lr_on_device, void* stream) { launch_decide(0, lr_on_device, stream); }

void DeviceOptimizer::launch_decide(float lr, const float* lr_on_device, void* stream) {
  optim::gpu::DecideArgs a;
  a.lr = lr;
  a.lr_on_device = lr_on_device;
  a.stats = impl_->stats;
  a.extra = extra_statistics_;
  a.max_norm = step_options_.max_gradient_norm;
  a.has_scaler = step_options_.loss_scaling;
  a.scaler = step_options_.scaler;
  a.adam = name_ == "adam";
  a.beta1 = static_cast<float>(o_.adam_beta1);
  a.beta2 = static_cast<float>(o_.adam_beta2);
  optim::gpu::decide_step(static_cast<const double*>(impl_->partials.raw()), impl_->chunks, a,
                           static_cast<StepControl*>(impl_->control.raw()), cuda::stream_or_current(stream));
}

void DeviceOptimizer::apply(void* stream) { launch_update(stream); }

DeviceStepReadback DeviceOptimizer::read_back() const {
  const StepControl c = read_control(impl_->control);
  return {.norm = c.norm, .applied = c.apply != 0, .scaler = c.scaler};
}

void DeviceOptimizer::set_scaler_state(const optim::rule::ScalerState& state) {
  StepControl c = read_control(impl_->control);
  c.scaler = state;
  c.inv_scale = static_cast<float>(1.0 / state.scale);
  write_control(impl_->control, c);
}

void DeviceOptimizer::step(float lr, float grad_scale, void* stream) {
  if (name_ == "ftrl" && !(lr > 0.0f)) throw Error(str("ftrl needs a learning rate > 0, got ", lr));
  optim::gpu::DecideArgs a;
  a.lr = lr;
  a.fixed = true;
  a.fixed_factor = grad_scale;
  a.adam = name_ == "adam";
  a.beta1 = static_cast<float>(o_.adam_beta1);
  a.beta2 = static_cast<float>(o_.adam_beta2);
  optim::gpu::decide_step(static_cast<const double*>(impl_->partials.raw()), impl_->chunks, a,
                           static_cast<StepControl*>(impl_->control.raw()), cuda::stream_or_current(stream));
  launch_update(stream);
}

// One launch for every parameter: the optimizer's rule (lr comes from the control) over the chunk table.
void DeviceOptimizer::launch_update(void* stream) {
  cudaStream_t s = cuda::stream_or_current(stream);
  const auto* table = static_cast<const optim::TensorChunk*>(impl_->table.raw());
  const auto* control = static_cast<const StepControl*>(impl_->control.raw());
  const int64_t n = impl_->chunks;
  with_storage_type(step_options_.compute, [&](auto t) {
    using T = decltype(t);
    optim::with_rule(o_, [&](auto rule) { optim::gpu::update_chunks<decltype(rule), T>(rule, table, n, control, s); });
  });
}

std::vector<NamedArray> DeviceOptimizer::export_state() const {
  std::vector<NamedArray> out;  // Optimizer::export_state's order: slots by parameter, then scalars
  for (size_t i = 0; i < params_.size(); ++i)
    for (const Slot& s : slots_) {
      std::vector<float> v = cuda::to_host(s.data[i]).to_vector<float>();
      v.resize(static_cast<size_t>(params_[i].count));
      out.push_back({params_[i].name + "/" + s.name, std::move(v)});
    }
  if (name_ == "adam") {
    const StepControl c = read_control(impl_->control);
    out.push_back({"adam/beta1_power", {c.beta1_power}});
    out.push_back({"adam/beta2_power", {c.beta2_power}});
  }
  return out;
}

void DeviceOptimizer::import_state(const std::vector<NamedArray>& arrays) {
  std::map<std::string, const NamedArray*> by_name;
  for (const NamedArray& a : arrays)
    if (!by_name.emplace(a.name, &a).second)
      throw FormatError(str("optimizer ", name_, " state: array '", a.name, "' given twice"));
  size_t expected = 0;
  auto need = [&](const std::string& n, size_t count) -> const std::vector<float>& {
    ++expected;
    auto it = by_name.find(n);
    if (it == by_name.end())
      throw FormatError(str("optimizer ", name_, " state: array '", n, "' is missing (was the checkpoint written with another optimizer?)"));
    if (it->second->data.size() != count)
      throw FormatError(str("optimizer ", name_, " state: array '", n, "' has ", it->second->data.size(), " floats, expected ", count));
    return it->second->data;
  };
  // Check everything before writing anything.
  for (size_t i = 0; i < params_.size(); ++i)
    for (const Slot& s : slots_) need(params_[i].name + "/" + s.name, static_cast<size_t>(params_[i].count));
  if (name_ == "adam") {
    need("adam/beta1_power", 1);
    need("adam/beta2_power", 1);
  }
  if (arrays.size() != expected) throw FormatError(str("optimizer ", name_, " state: ", arrays.size() - expected, " unknown array(s)"));
  expected = 0;
  for (size_t i = 0; i < params_.size(); ++i)
    for (Slot& s : slots_) {
      const std::vector<float>& src = need(params_[i].name + "/" + s.name, static_cast<size_t>(params_[i].count));
      if (src.empty()) continue;
      Tensor host = Tensor::from<float>({static_cast<int64_t>(src.size())}, std::span<const float>(src));
      Tensor dst({static_cast<int64_t>(src.size())}, DType::kF32, s.data[i].storage());
      cuda::copy_async(dst, host);
      cuda::synchronize();  // `host` dies at the end of this iteration
    }
  if (name_ == "adam") {
    StepControl c = read_control(impl_->control);
    c.beta1_power = need("adam/beta1_power", 1)[0];
    c.beta2_power = need("adam/beta2_power", 1)[0];
    write_control(impl_->control, c);
  }
}

}  // namespace fastnn
