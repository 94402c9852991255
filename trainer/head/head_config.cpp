#include "trainer/head/head_config.h"

#include <optional>

#include "core/check.h"
#include "trainer/head/margin.h"

namespace fastnn::head {

bool uses_head(const JobConfig& c) { return c.loss_type() != "softmax" || c.has_emb_dim(); }

void check_head_config(const JobConfig& c) {
  if (!uses_head(c)) return;
  // The net's output layer gets emb_dim units: bounded here, so that the error names emb_dim and not the
  // zoo's num_classes, which it becomes in build_net.
  if (c.emb_dim() < 1 || c.emb_dim() > (int64_t{1} << 24))
    throw ConfigError(str("emb_dim must be in [1, 2^24], got ", c.emb_dim()));
  if (!(c.sample_ratio() > 0 && c.sample_ratio() <= 1))
    throw ConfigError(str("sample_ratio must be in (0, 1], got ", c.sample_ratio()));
  if (c.sample_ratio() < 1 && !is_model_parallel_loss(c.loss_type()))
    throw ConfigError(str("sample_ratio ", c.sample_ratio(), " (PartialFC) needs a dist_ loss_type, got ", c.loss_type()));
  if (c.label_smoothing() > 0)
    throw ConfigError(str("label_smoothing ", c.label_smoothing(), " is not supported with loss_type ", c.loss_type(),
                          " (the head's softmax has no smoothing)"));
  head_options(c, 1, 0);  // margin_spec's checks
}

int64_t net_outputs(const JobConfig& c, int64_t num_classes) { return uses_head(c) ? c.emb_dim() : num_classes; }

NetDef with_embedding(NetDef net) {
  LayerDef* bn = net.add_layers();
  bn->set_name("Embedding/BatchNorm");
  bn->add_inputs(net.logits());
  bn->mutable_batch_norm();
  net.set_logits(bn->name());
  return net;
}

HeadOptions head_options(const JobConfig& c, int64_t num_classes, uint64_t seed) {
  auto opt = [](bool has, double v) { return has ? std::optional<double>(v) : std::nullopt; };
  HeadOptions o;
  o.num_classes = num_classes;
  o.emb_dim = c.emb_dim();
  o.margin = margin_spec(c.loss_type(), c.margin(), c.scale(), opt(c.has_margin1(), c.margin1()),
                         opt(c.has_margin2(), c.margin2()), opt(c.has_margin3(), c.margin3()), c.easy_margin());
  o.sharded = is_model_parallel_loss(c.loss_type());
  o.sample_ratio = c.sample_ratio();
  o.seed = seed;
  return o;
}

}  // namespace fastnn::head
