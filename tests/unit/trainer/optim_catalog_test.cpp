// optimizer_catalog.h against the optimizers themselves: every CPU optimizer registers exactly the
// catalog's slots (names, order, initial values); `decays_itself` is what the update does (a zero
// gradient moves a decayed weight only when the optimizer applies weight_decay itself); the names
// make_optimizer accepts are the catalog's; unknown names are refused naming the valid ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "tests/unit/trainer/optim_test_options.h"
#include "trainer/optim/optimizer_catalog.h"
#include "trainer/optim/optimizers.h"

namespace fastnn::optim {
namespace {

// Options where each slot's initial value is distinguishable (adagrad's and ftrl's accumulators differ)
// and each optimizer that can decay does so with weight_decay 0.1; adamweightdecay's own rate is 0, as
// the config's weight_decay is not its rate.
OptimizerOptions catalog_case_options(std::string_view name) {
  OptimizerOptions o = optim_test::every_rule_options(std::string(name));
  o.adagrad_initial_accumulator_value = 0.25;
  o.ftrl_initial_accumulator_value = 0.5;
  o.adam_weight_decay_rate = 0.0;
  o.adamw_weight_decay = o.lars_weight_decay = o.lamb_weight_decay = 0.1;
  o.lars_eeta = 0.001;
  o.lars_epsilon = 0.0;
  return o;
}

TEST(OptimizerCatalog, EveryCpuOptimizerRegistersTheCatalogsSlots) {
  for (const OptimizerTraits& t : optimizer_catalog()) {
    const OptimizerOptions o = catalog_case_options(t.name);
    std::vector<float> w = {0.5f, -1.0f, 2.0f}, g(3, 0.0f);
    std::unique_ptr<Optimizer> opt = make_optimizer(o, {{"w", w.data(), g.data(), w.size(), true}});
    EXPECT_EQ(opt->name(), t.name);
    const std::vector<SlotInit> slots = slot_inits(o);
    std::vector<StateArray> per_param;  // the state's "<param>/<slot>" arrays; the rest are scalars
    for (const StateArray& a : opt->state())
      if (a.name.starts_with("w/")) per_param.push_back(a);
    ASSERT_EQ(per_param.size(), slots.size()) << t.name;
    for (size_t i = 0; i < slots.size(); ++i) {
      EXPECT_EQ(per_param[i].name, "w/" + slots[i].name) << t.name;
      ASSERT_EQ(per_param[i].count, w.size());
      for (size_t k = 0; k < w.size(); ++k) EXPECT_EQ(per_param[i].data[k], slots[i].init) << per_param[i].name;
    }
  }
}

TEST(OptimizerCatalog, DecaysItselfIsWhatTheUpdateDoes) {
  for (const OptimizerTraits& t : optimizer_catalog()) {
    if (t.name == "ftrl") continue;  // its proximal step zeroes a weight no gradient has reached yet
    std::vector<float> w = {0.5f, -1.0f, 2.0f}, g(3, 0.0f);
    const std::vector<float> before = w;
    std::unique_ptr<Optimizer> opt = make_optimizer(catalog_case_options(t.name), {{"w", w.data(), g.data(), w.size(), true}});
    opt->step(0.1f);
    EXPECT_EQ(w != before, t.decays_itself) << t.name;
    EXPECT_EQ(applies_weight_decay_itself(std::string(t.name)), t.decays_itself);
  }
}

TEST(OptimizerCatalog, NamesAreTheCatalogsAndUnknownOnesAreRefused) {
  ASSERT_EQ(optimizer_names().size(), optimizer_catalog().size());
  for (size_t i = 0; i < optimizer_names().size(); ++i) EXPECT_EQ(optimizer_names()[i], optimizer_catalog()[i].name);
  for (const OptimizerTraits& t : optimizer_catalog()) EXPECT_EQ(&optimizer_traits(t.name), &t);
  try {
    slot_inits(catalog_case_options("nadam"));
    ADD_FAILURE() << "nadam accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"nadam\" is not one of: adadelta, adagrad, adam, ftrl"), std::string::npos)
        << e.what();
  }
  std::vector<float> w(1), g(1);
  EXPECT_THROW(make_optimizer(catalog_case_options("nadam"), {{"w", w.data(), g.data(), 1, true}}), ConfigError);
  EXPECT_THROW(applies_weight_decay_itself("nadam"), ConfigError);
}

}  // namespace
}  // namespace fastnn::optim
