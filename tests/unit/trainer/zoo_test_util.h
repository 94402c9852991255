// Shared by the zoo_* tests: a zoo model's trainable parameters by name, as its plan declares them.
#pragma once

#include <map>
#include <string>

#include "trainer/graph/net_plan.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::testing_util {

inline std::map<std::string, Shape> trainable_shapes(const std::string& model, zoo::ZooOptions o = {}) {
  std::map<std::string, Shape> out;
  const graph::NetPlan plan = graph::NetPlan::make(zoo::build_net(model, o), {});
  for (const graph::PlanNode& n : plan.nodes())
    for (const graph::PlannedTensor& p : n.params)
      if (p.trainable) out[p.name] = p.spec.shape;
  return out;
}

}  // namespace fastnn::testing_util
