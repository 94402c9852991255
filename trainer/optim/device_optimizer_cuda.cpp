#include <cmath>
#include <map>
#include <set>
#include <span>
#include <string_view>

#include "core/check.h"
#include "trainer/cuda/runtime.h"
#include "trainer/optim/device_optimizer.h"
#include "trainer/optim/update_kernels.h"

namespace fastnn {

bool DeviceOptimizer::supports(const std::string& n) {
  for (std::string_view known : optimizer_names())
    if (n == known) return true;
  return false;
}

DeviceOptimizer::DeviceOptimizer(const OptimizerOptions& o, std::vector<DeviceParam> params)
    : name_(o.optimizer), o_(o), params_(std::move(params)) {
  if (!supports(name_))
    throw ConfigError(str("optimizer \"", name_, "\" is not a FastNN optimizer"));
  std::set<std::string> names;
  for (const DeviceParam& p : params_) {
    FASTNN_CHECK(names.insert(p.name).second, "device optimizer: parameter '", p.name, "' given twice");
    FASTNN_CHECK(p.count == 0 || (p.master && p.grad), "device optimizer: parameter '", p.name, "' without buffers");
  }
  auto f = [](double v) { return static_cast<float>(v); };
  // The CPU optimizers' slots, in their order and with their initial values (trainer/optim/optimizers.h).
  std::vector<std::pair<std::string, float>> slot_inits;
  if (name_ == "momentum") slot_inits = {{"momentum", 0.0f}};
  if (name_ == "adam" || name_ == "adamweightdecay") slot_inits = {{"adam_m", 0.0f}, {"adam_v", 0.0f}};
  if (name_ == "rmsprop") slot_inits = {{"rms", 1.0f}, {"momentum", 0.0f}};
  if (name_ == "adagrad") slot_inits = {{"accumulator", f(o.adagrad_initial_accumulator_value)}};
  if (name_ == "adadelta") slot_inits = {{"accum", 0.0f}, {"accum_update", 0.0f}};
  if (name_ == "ftrl") slot_inits = {{"accum", f(o.ftrl_initial_accumulator_value)}, {"linear", 0.0f}};
  for (const auto& [slot_name, init] : slot_inits) {
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
  beta1_power_ = static_cast<float>(o.adam_beta1);
  beta2_power_ = static_cast<float>(o.adam_beta2);
}

void DeviceOptimizer::step(float lr, float grad_scale, void* stream) {
  cudaStream_t s = cuda::stream_or_current(stream);
  auto f = [](double v) { return static_cast<float>(v); };
  // The proximal step divides by lr; TF would silently write inf/NaN into the weights (as the CPU's).
  if (name_ == "ftrl" && !(lr > 0.0f)) throw Error(str("ftrl needs a learning rate > 0, got ", lr));
  float lr_t = lr;
  if (name_ == "adam") {  // the CPU's begin_step, in the same precision
    const double b1p = beta1_power_, b2p = beta2_power_;
    lr_t = static_cast<float>(lr * std::sqrt(1.0 - b2p) / (1.0 - b1p));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const DeviceParam& p = params_[i];
    if (p.count == 0) continue;
    if (name_ == "sgd") {
      optim::cuda::sgd_update<float>(p.count, lr, grad_scale, p.master, p.grad, s);
    } else if (name_ == "momentum") {
      optim::cuda::momentum_update<float>(p.count, lr, f(o_.momentum), o_.use_nesterov, grad_scale, p.master, p.grad,
                                   slots_[0].data[i].data<float>(), s);
    } else if (name_ == "adam") {
      optim::cuda::adam_update<float>(p.count, lr_t, f(o_.adam_beta1), f(o_.adam_beta2), f(o_.opt_epsilon), grad_scale,
                               p.master, p.grad, slots_[0].data[i].data<float>(), slots_[1].data[i].data<float>(), s);
    } else if (name_ == "rmsprop") {
      optim::cuda::rmsprop_update<float>(p.count, lr, f(o_.rmsprop_decay), f(o_.rmsprop_momentum), f(o_.opt_epsilon),
                                  grad_scale, p.master, p.grad, slots_[0].data[i].data<float>(),
                                  slots_[1].data[i].data<float>(), s);
    } else if (name_ == "adagrad") {
      optim::cuda::adagrad_update<float>(p.count, lr, grad_scale, p.master, p.grad, slots_[0].data[i].data<float>(), s);
    } else if (name_ == "adadelta") {
      optim::cuda::adadelta_update<float>(p.count, lr, f(o_.adadelta_rho), f(o_.opt_epsilon), grad_scale, p.master, p.grad,
                                   slots_[0].data[i].data<float>(), slots_[1].data[i].data<float>(), s);
    } else if (name_ == "ftrl") {
      optim::cuda::ftrl_update<float>(p.count, lr, f(o_.ftrl_learning_rate_power), f(o_.ftrl_l1), f(o_.ftrl_l2), grad_scale,
                               p.master, p.grad, slots_[0].data[i].data<float>(), slots_[1].data[i].data<float>(), s);
    } else {
      const float rate = (p.decay && f(o_.adam_weight_decay_rate) != 0.0f) ? f(o_.adam_weight_decay_rate) : 0.0f;
      optim::cuda::adam_weight_decay_update<float>(p.count, lr, f(o_.adam_beta1), f(o_.adam_beta2), f(o_.opt_epsilon), rate,
                                            grad_scale, p.master, p.grad, slots_[0].data[i].data<float>(),
                                            slots_[1].data[i].data<float>(), s);
    }
  }
  if (name_ == "adam") {
    beta1_power_ *= f(o_.adam_beta1);
    beta2_power_ *= f(o_.adam_beta2);
  }
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
    out.push_back({"adam/beta1_power", {beta1_power_}});
    out.push_back({"adam/beta2_power", {beta2_power_}});
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
    beta1_power_ = need("adam/beta1_power", 1)[0];
    beta2_power_ = need("adam/beta2_power", 1)[0];
  }
}

}  // namespace fastnn
