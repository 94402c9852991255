#include "trainer/optim/optimizer_catalog.h"

#include "core/check.h"

namespace fastnn::optim {
namespace {

// A slot's initial value: an option's (adagrad's, ftrl's accumulators) or a constant.
struct SlotSpec {
  std::string_view name;
  double OptimizerOptions::* option = nullptr;
  float constant = 0.0f;
};

struct Entry {
  OptimizerTraits traits;
  std::vector<SlotSpec> slots;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"adadelta", false, true}, {{"accum"}, {"accum_update"}}},
      {{"adagrad", false, true}, {{"accumulator", &OptimizerOptions::adagrad_initial_accumulator_value}}},
      {{"adam", false, true}, {{"adam_m"}, {"adam_v"}}},
      {{"ftrl", false, true}, {{"accum", &OptimizerOptions::ftrl_initial_accumulator_value}, {"linear"}}},
      {{"momentum", false, true}, {{"momentum"}}},
      {{"sgd", false, true}, {}},
      {{"rmsprop", false, true}, {{"rms", nullptr, 1.0f}, {"momentum"}}},
      {{"adamweightdecay", false, true}, {{"adam_m"}, {"adam_v"}}},
      {{"adamw", true, false}, {{"adam_m"}, {"adam_v"}}},
      {{"lars", true, false}, {{"momentum"}}},
      {{"lamb", true, false}, {{"adam_m"}, {"adam_v"}}},
  };
  return table;
}

const Entry& entry(std::string_view name) {
  for (const Entry& e : entries())
    if (e.traits.name == name) return e;
  std::string valid;
  for (const Entry& e : entries()) valid += str(valid.empty() ? "" : ", ", e.traits.name);
  throw ConfigError(str("optimizer \"", name, "\" is not one of: ", valid));
}

}  // namespace

const std::vector<OptimizerTraits>& optimizer_catalog() {
  static const std::vector<OptimizerTraits> traits = [] {
    std::vector<OptimizerTraits> t;
    for (const Entry& e : entries()) t.push_back(e.traits);
    return t;
  }();
  return traits;
}

const OptimizerTraits& optimizer_traits(std::string_view name) {
  return optimizer_catalog()[static_cast<size_t>(&entry(name) - entries().data())];
}

std::vector<SlotInit> slot_inits(const OptimizerOptions& options) {
  std::vector<SlotInit> slots;
  for (const SlotSpec& s : entry(options.optimizer).slots)
    slots.push_back({std::string(s.name), s.option ? static_cast<float>(options.*s.option) : s.constant});
  return slots;
}

}  // namespace fastnn::optim
