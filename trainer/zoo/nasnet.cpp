// TF-slim's NASNet-A (nets/nasnet/nasnet.py, nasnet_utils.py) and PNASNet-5 (nets/nasnet/pnasnet.py):
// nasnet_cifar, nasnet_mobile, nasnet_large, pnasnet_mobile, pnasnet_large, with their arg scopes
// (conv / separable / fc weights from variance_scaling FAN_OUT, L2 decay on all of them, no conv biases,
// batch norm with scale as separate layers: decay 0.9997 / epsilon 0.001, cifar 0.9 / 1e-5).
//
// Names are TF-slim's variable names, at the root (TF-slim opens no model scope): "conv0", "conv0_bn",
// "cell_stem_0/1x1", "cell_3/comb_iter_0/left/separable_5x5_1/depthwise_weights", ".../bn_sep_5x5_1",
// "reduction_cell_0/...", "cell_7/prev_1x1", "cell_6/path1_conv", "cell_0/cell_output/reduction_1/path_conv",
// "aux_7/aux_logits/proj", ".../aux_bn0", ".../Conv", ".../aux_bn1", ".../FC", "final_layer/FC".
//
// A cell (NasNetABaseCell): the previous-previous output is matched to the current one (factorized
// reduction when its size differs, relu + 1x1 + BN when its depth does), the input gets relu + 1x1 +
// BN; then 5 combinations each add two operations (stacked relu + separable conv + BN twice, 3x3
// pooling + 1x1 + BN when depths differ, or the identity / a strided relu + 1x1 + BN) on two earlier
// states; the states no combination used are concatenated (made to match by factorized reduction).
// Every operation but the identity ends in drop_path (ops/drop_path.h) when drop_path_keep_prob < 1.
// The factorized reduction's second path is spatial_shift(1, 1) (TF-slim's pad-then-crop) before its
// 1x1 stride-2 average pool; here the 1x1 stride-2 pool + 1x1 conv is one 1x1 stride-2 VALID conv (the
// same values and parameters).
//
// The auxiliary head (built in training by TF-slim, always here as for inception_v3; loss weight 0.4 as
// TF-slim's training notes say) sits after the normal cell before the second reduction: relu, avg pool
// 5x5/3 VALID, 1x1 128 + BN + relu, conv with the map's size 768 VALID + BN + relu, fully connected.
// It needs that map to be at least 5x5: inputs of at least 67 (ImageNet nets) or 9 (nasnet_cifar);
// without it any input from 3 (the stem's VALID 3x3) or 1 works.
// Parameter counts and their sources: docs/MODELS.md.
#include <algorithm>
#include <set>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

struct CellSpec {
  const char* ops[10];
  int used[7];
  int inputs[10];  // hidden-state index of each operation
};

constexpr CellSpec kNasNormal{{"separable_5x5_2", "separable_3x3_2", "separable_5x5_2", "separable_3x3_2",
                               "avg_pool_3x3", "none", "avg_pool_3x3", "avg_pool_3x3", "separable_3x3_2", "none"},
                              {1, 0, 0, 0, 0, 0, 0},
                              {0, 1, 1, 1, 0, 1, 1, 1, 0, 0}};
constexpr CellSpec kNasReduction{{"separable_5x5_2", "separable_7x7_2", "max_pool_3x3", "separable_7x7_2",
                                  "avg_pool_3x3", "separable_5x5_2", "none", "avg_pool_3x3", "separable_3x3_2",
                                  "max_pool_3x3"},
                                 {1, 1, 1, 0, 0, 0, 0},
                                 {0, 1, 0, 1, 0, 1, 3, 2, 2, 0}};
constexpr CellSpec kPnasCell{{"separable_5x5_2", "max_pool_3x3", "separable_7x7_2", "max_pool_3x3",
                              "separable_5x5_2", "separable_3x3_2", "separable_3x3_2", "max_pool_3x3",
                              "separable_3x3_2", "none"},
                             {1, 1, 0, 0, 0, 0, 0},
                             {1, 1, 0, 0, 0, 0, 4, 0, 1, 0}};

// TF-slim's hparams (cifar_config, mobile_imagenet_config, large_imagenet_config of each file).
struct Hparams {
  const char* name;
  double stem_multiplier;
  int num_cells, num_conv_filters;
  double drop_path_keep_prob, dense_dropout_keep_prob;
  bool skip_reduction_layer_input;
  int64_t total_training_steps;
  bool cifar;
};

Hparams hparams(NasVariant v, bool pnas) {
  if (pnas)
    return v == NasVariant::kLarge ? Hparams{"pnasnet_large", 3.0, 12, 216, 0.6, 0.5, true, 250000, false}
                                   : Hparams{"pnasnet_mobile", 1.0, 9, 54, 1.0, 0.5, true, 250000, false};
  switch (v) {
    case NasVariant::kCifar: return {"nasnet_cifar", 3.0, 18, 32, 0.6, 1.0, false, 937500, true};
    case NasVariant::kMobile: return {"nasnet_mobile", 1.0, 12, 44, 1.0, 0.5, false, 250000, false};
    case NasVariant::kLarge: break;
  }
  return {"nasnet_large", 3.0, 18, 168, 0.7, 0.5, true, 250000, false};
}

int op_kernel(const std::string& op) { return op[op.find('x') - 1] - '0'; }  // "separable_5x5_2" -> 5

struct Nas {
  NetBuilder& b;
  BatchNormLayer bn;
  DropPathLayer drop;  // cell_index set per use
  std::set<std::string> names;

  // Unique local names for parameter-free layers, TF style ("Relu", "Relu_1", ...).
  std::string fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; names.count(b.full_name(n)); ++i) n = str(base, "_", i);
    names.insert(b.full_name(n));
    return n;
  }
  std::string relu(const std::string& x) { return b.relu(x, fresh("Relu")); }
  std::string batch_norm(const std::string& x, const std::string& name) { return b.batch_norm(x, name, bn); }
  std::string conv1x1(const std::string& x, const std::string& name, int filters, int stride = 1) {
    return b.conv2d(x, name, {.filters = filters, .kernel = {1}, .stride = {stride}, .padding = "valid"});
  }
  int64_t depth(const std::string& x) const { return b.dims(x)[0]; }
  int64_t size(const std::string& x) const { return b.dims(x)[1]; }

  // nasnet_utils.factorized_reduction.
  std::string factorized_reduction(const std::string& x, int filters, int stride) {
    if (stride == 1) return batch_norm(conv1x1(x, "path_conv", filters), "path_bn");
    const std::string p1 = conv1x1(x, "path1_conv", filters / 2, stride);
    const std::string shifted = b.spatial_shift(x, fresh("path2_shift"), 1, 1);
    const std::string p2 = conv1x1(shifted, "path2_conv", filters / 2, stride);
    return batch_norm(b.concat({p1, p2}, fresh("concat")), "final_path_bn");
  }

  std::string reduce_prev_layer(const std::string& prev, const std::string& curr, int filters) {
    if (prev.empty()) return curr;
    if (size(prev) != size(curr)) return factorized_reduction(relu(prev), filters, 2);
    if (depth(prev) != filters) return batch_norm(conv1x1(relu(prev), "prev_1x1", filters), "prev_bn");
    return prev;
  }

  std::string maybe_drop_path(const std::string& x, int cell_index) {
    if (drop.keep_prob() >= 1) return x;
    DropPathLayer d = drop;
    d.set_cell_index(cell_index);
    return b.drop_path(x, fresh("drop_path"), d);
  }

  // NasNetABaseCell._apply_conv_operation.
  std::string operation(std::string x, const std::string& op, int stride, bool original, int filters,
                        int cell_index) {
    if (stride > 1 && !original) stride = 1;
    const int64_t in_filters = depth(x);
    if (op.starts_with("separable")) {
      const int k = op_kernel(op), layers = op.back() - '0';
      for (int l = 1; l <= layers; ++l) {
        x = b.separable_conv2d(relu(x), str("separable_", k, "x", k, "_", l),
                               {.filters = filters, .kernel = {k}, .stride = {l == 1 ? stride : 1}});
        x = batch_norm(x, str("bn_sep_", k, "x", k, "_", l));
      }
    } else if (op == "none") {
      if (stride > 1 || in_filters != filters) x = batch_norm(conv1x1(relu(x), "1x1", filters, stride), "bn_1");
      return x;
    } else {
      x = op.starts_with("avg") ? b.avg_pool2d(x, fresh("AvgPool"), {3}, {stride}, "same")
                                : b.max_pool2d(x, fresh("MaxPool"), {3}, {stride}, "same");
      if (in_filters != filters) x = batch_norm(conv1x1(x, "1x1", filters), "bn_1");
    }
    return maybe_drop_path(x, cell_index);
  }

  // NasNetABaseCell.__call__.
  std::string cell(const CellSpec& spec, const std::string& net, const std::string& scope, int filters, int stride,
                   const std::string& prev_layer, int cell_index) {
    auto s = b.scope(scope);
    std::vector<std::string> h;
    const std::string prev = reduce_prev_layer(prev_layer, net, filters);
    h.push_back(batch_norm(conv1x1(relu(net), "1x1", filters), "beginning_bn"));
    h.push_back(prev);
    for (int it = 0; it < 5; ++it) {
      auto sc = b.scope(str("comb_iter_", it));
      std::string sides[2];
      for (int k = 0; k < 2; ++k) {
        auto side = b.scope(k == 0 ? "left" : "right");
        const int idx = spec.inputs[2 * it + k];
        sides[k] = operation(h.at(idx), spec.ops[2 * it + k], stride, idx < 2, filters, cell_index);
      }
      auto comb = b.scope("combine");
      h.push_back(b.add({sides[0], sides[1]}, "add"));
    }
    auto out = b.scope("cell_output");
    const int64_t final_size = size(h.back()), final_depth = depth(h.back());
    std::vector<std::string> unused;
    for (size_t i = 0; i < h.size(); ++i) {
      if (spec.used[i]) continue;
      if (size(h[i]) != final_size || depth(h[i]) != final_depth) {
        auto r = b.scope(str("reduction_", i));
        h[i] = factorized_reduction(h[i], static_cast<int>(final_depth), size(h[i]) != final_size ? 2 : 1);
      }
      unused.push_back(h[i]);
    }
    return b.concat(unused, "concat");
  }

  // nasnet._build_aux_head on relu(net).
  std::string aux_head(const std::string& net, int cell_num, int num_classes, const std::string& model) {
    auto s = b.scope(str("aux_", cell_num));
    std::string a = relu(net);
    auto al = b.scope("aux_logits");
    if (size(a) < 5 || b.dims(a)[2] < 5)
      throw ConfigError(str(model, ": the aux logits head needs a map of at least 5x5 after cell ", cell_num, " (got ",
                            size(a), "x", b.dims(a)[2], "): inputs of at least ", model == "nasnet_cifar" ? 9 : 67,
                            "; build without it (aux_logits = false) for smaller ones"));
    a = b.avg_pool2d(a, "AvgPool", {5}, {3}, "valid");
    a = b.relu(batch_norm(conv1x1(a, "proj", 128), "aux_bn0"), "Relu");
    const int kh = static_cast<int>(b.dims(a)[1]), kw = static_cast<int>(b.dims(a)[2]);
    a = b.conv2d(a, "Conv", {.filters = 768, .kernel = {kh, kw}, .padding = "valid"});
    a = b.relu(batch_norm(a, "aux_bn1"), "Relu_1");
    return b.fully_connected(a, "FC", {.units = num_classes, .relu = false});
  }
};

std::vector<int> reduction_layers(int num_cells, int num_reduction_layers) {
  std::vector<int> r;
  for (int p = 1; p <= num_reduction_layers; ++p)
    r.push_back(static_cast<int>(static_cast<double>(p) / (num_reduction_layers + 1) * num_cells));
  return r;
}

NetDef build(const ZooOptions& o, NasVariant v, bool pnas) {
  const Hparams hp = hparams(v, pnas);
  NetBuilder b("", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.weight_init.set_mode(InitSpec::FAN_OUT);
  b.conv_defaults.relu = false;
  b.conv_defaults.bias = false;
  b.conv_defaults.padding = "same";
  b.fc_defaults.weight_init = b.conv_defaults.weight_init;
  b.fc_defaults.bias_init = zeros_init();
  b.fc_defaults.relu = false;
  Nas n{b, hp.cifar ? batch_norm_params(0.9f, 1e-5f, true) : batch_norm_params(0.9997f, 0.001f, true), {}, {}};
  const double keep = o.drop_path_keep_prob >= 0 ? o.drop_path_keep_prob : hp.drop_path_keep_prob;
  if (!(keep > 0 && keep <= 1))
    throw ConfigError(str(hp.name, ": drop_path_keep_prob must be in (0, 1], got ", keep));
  n.drop.set_keep_prob(static_cast<float>(keep));
  // TF-slim: the normal and reduction cells, plus the two stem cells of the ImageNet nets (NASNet);
  // PNASNet counts its cells plus the stem cells.
  const int total_cells = pnas ? hp.num_cells + 2 : hp.num_cells + 2 + (hp.cifar ? 0 : 2);
  n.drop.set_total_cells(total_cells);
  n.drop.set_total_steps(o.total_training_steps >= 0 ? o.total_training_steps : hp.total_training_steps);

  const CellSpec& normal = pnas ? kPnasCell : kNasNormal;
  const CellSpec& reduction = pnas ? kPnasCell : kNasReduction;
  const auto filters = [&](double scaling) { return static_cast<int>(hp.num_conv_filters * scaling); };

  std::string net;
  std::vector<std::string> outputs;  // cell_outputs; "" is TF-slim's None
  if (hp.cifar) {
    net = n.batch_norm(b.conv2d("data", "l1_stem_3x3",
                                {.filters = static_cast<int>(hp.num_conv_filters * hp.stem_multiplier), .kernel = {3}}),
                       "l1_stem_bn");
    outputs = {"", net};
  } else {
    net = n.batch_norm(b.conv2d("data", "conv0", {.filters = static_cast<int>(32 * hp.stem_multiplier), .kernel = {3},
                                                  .stride = {2}, .padding = "valid"}),
                       "conv0_bn");
    outputs = {"", net};
    double scaling = 1.0 / 4;  // 1 / filter_scaling_rate^2
    for (int c = 0; c < 2; ++c) {
      net = n.cell(pnas ? normal : reduction, net, str("cell_stem_", c), filters(scaling), 2, outputs.end()[-2], c);
      outputs.push_back(net);
      scaling *= 2;
    }
  }

  const std::vector<int> reductions = reduction_layers(hp.num_cells, 2);
  const int aux_cell = reductions[1] - 1;
  std::string aux;
  double scaling = 1.0;
  int true_cell = hp.cifar ? 0 : 2;
  for (int c = 0; c < hp.num_cells; ++c) {
    const auto r = std::find(reductions.begin(), reductions.end(), c);
    const bool is_reduction = r != reductions.end();
    std::string prev;
    if (pnas) {
      if (is_reduction) scaling *= 2;
      prev = outputs.end()[-2];
      net = n.cell(normal, net, str("cell_", c), filters(scaling), is_reduction ? 2 : 1, prev, true_cell++);
    } else {
      if (hp.skip_reduction_layer_input) prev = outputs.end()[-2];
      if (is_reduction) {
        scaling *= 2;
        net = n.cell(reduction, net, str("reduction_cell_", r - reductions.begin()), filters(scaling), 2,
                     outputs.end()[-2], true_cell++);
        outputs.push_back(net);
      }
      if (!hp.skip_reduction_layer_input) prev = outputs.end()[-2];
      net = n.cell(normal, net, str("cell_", c), filters(scaling), 1, prev, true_cell++);
    }
    if (c == aux_cell && o.aux_logits) aux = n.aux_head(net, c, o.num_classes, hp.name);
    outputs.push_back(net);
  }

  std::string logits;
  {
    auto s = b.scope("final_layer");
    std::string x = b.global_avg_pool(n.relu(net), "mean");
    if (hp.dense_dropout_keep_prob < 1) x = b.dropout(x, "dropout", static_cast<float>(hp.dense_dropout_keep_prob));
    logits = b.fully_connected(x, "FC", {.units = o.num_classes});
  }
  NetDef def = b.finish(logits, aux, 0.4f);
  def.set_name(hp.name);
  return def;
}

}  // namespace

NetDef build_nasnet(const ZooOptions& o, NasVariant v) { return build(o, v, false); }
NetDef build_pnasnet(const ZooOptions& o, NasVariant v) { return build(o, v, true); }

}  // namespace fastnn::zoo
