// Lowering of one LayerDef (schemas/net.proto) to the op that computes it: the op name and attributes,
// how many inputs the layer takes, and how its op's parameters and state are named, initialised and
// regularised (TF-slim names: weights, biases, gamma, beta, moving_mean, moving_variance).
//
// Every layer type is one op, so this is a table, not a framework: adding a layer type means a message
// in net.proto and a case here.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "schemas/net.pb.h"
#include "trainer/ops/attrs.h"
#include "trainer/ops/init.h"

namespace fastnn::graph {

// How the graph treats one of the op's params (keyed by the op's param name: "weight", "bias", ...).
struct ParamRule {
  std::string local_name;               // "weights": the full name is "<layer>/weights"
  bool trainable = true;                // false: a fixed constant (BN gamma = 1 when scale is off)
  std::optional<ops::InitRule> init;    // nullopt: the op's own Init tag (ops/init.h)
  bool weight_decay = false;
};

struct LoweredLayer {
  std::string type;  // the oneof field name: "conv", "batch_norm", ...
  std::string op;    // registry name: "conv2d", "batch_norm", ...
  ops::Attrs attrs;
  size_t min_inputs = 1, max_inputs = 1;
  std::map<std::string, ParamRule> params;       // op param name -> rule
  std::map<std::string, std::string> state;      // op state name -> local name
};

// ConfigError naming the layer and field for values the op would not catch (no type set, a missing
// kernel, padding given twice, an unknown InitSpec kind).
LoweredLayer lower_layer(const LayerDef& layer);

// A proto float as the double it was written as (0.4f -> 0.4, not 0.4000000059604645): the shortest
// decimal that reads back as the same float, parsed as a double.
double widen(float f);

// nullopt for InitSpec.kind DEFAULT; ConfigError for nonsense (stddev < 0, low > high, factor <= 0).
std::optional<ops::InitRule> to_init_rule(const InitSpec& spec, const std::string& where);

}  // namespace fastnn::graph
