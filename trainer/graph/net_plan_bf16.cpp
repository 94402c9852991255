// NetPlan's choice of the activations that stay bfloat16 in an inference plan under
// PlanOptions::fold_in_bf16 (fold_batch_norms applies it; net_plan.cpp holds the rest of the plan).
#include <string>
#include <vector>

#include "trainer/graph/net_plan.h"

namespace fastnn::graph {

// Which nodes write bf16 (by node), before any fold has joined its nodes: a bf16 fold, or a pool reading
// bf16 that can pass it on (OpRegistry::create_bf16_input_kernel), where every reader is a bf16 fold
// reading it as its convolution's input or its residual, or a pool, and no one reads it after the forward
// (PlanOptions::keep).
std::vector<bool> NetPlan::bf16_outputs(const std::vector<BatchNormFoldPair>& folds, const ops::OpRegistry& registry) const {
  const size_t n = nodes_.size();
  std::vector<const BatchNormFoldPair*> by_conv(n, nullptr), by_bn(n, nullptr);
  for (const BatchNormFoldPair& f : folds) {
    by_conv[f.conv] = &f;
    by_bn[f.bn] = &f;
  }
  const auto in_bf16 = [](const BatchNormFoldPair* f) { return f && f->kernel->signature().multiplies_in_bf16; };
  const auto pool = [&](size_t i) {
    return nodes_[i].inputs.size() == 1 && registry.has_bf16_input_kernel(nodes_[i].op, options_.device);
  };
  const auto is_add = [&](size_t i) { return nodes_[i].op == "batch_norm+add+relu" && nodes_[i].inputs.size() > 1; };
  std::vector<bool> read(n, false), only_bf16_readers(n, true);
  for (size_t r = 0; r < n; ++r)
    for (size_t s = 0; s < nodes_[r].inputs.size(); ++s) {
      const int p = nodes_[r].inputs[s];
      if (p == kDataInput) continue;
      const bool as_input = s == 0 && (in_bf16(by_conv[r]) || pool(r));
      const bool as_residual = s == 1 && in_bf16(by_bn[r]) && is_add(r);
      read[static_cast<size_t>(p)] = true;
      if (!as_input && !as_residual) only_bf16_readers[static_cast<size_t>(p)] = false;
    }
  std::vector<bool> kept(n, false);
  for (const std::string& name : options_.keep)
    if (const int k = find(name); k >= 0) kept[static_cast<size_t>(k)] = true;
  for (const BatchNormFoldPair& f : folds)
    if (kept[f.conv]) kept[f.bn] = true;  // the convolution's name finds the fold's output
  const auto input_in = [&](const std::vector<bool>& bf16, size_t i) {
    return nodes_[i].inputs[0] != kDataInput && bf16[static_cast<size_t>(nodes_[i].inputs[0])];
  };
  std::vector<bool> bf16(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!read[i] || !only_bf16_readers[i] || kept[i]) continue;
    if (by_bn[i]) {
      bf16[i] = in_bf16(by_bn[i]);
    } else if (pool(i) && input_in(bf16, i)) {
      bf16[i] = registry.create_bf16_input_kernel(nodes_[i].op, options_.device, nodes_[i].attrs, nchw_inputs_of(nodes_[i]), true) != nullptr;
    }
  }
  // A batch_norm+add+relu writing f32 keeps its residual in f32 as well, so that its output can take the
  // residual's buffer (OpSignature::output_may_take_input) rather than need one more of its size (ResNet-50
  // at batch 32 with its pools reading f32 needed 77 MB more than the f32 graph). A residual chain is
  // followed from its end; a pool whose input so turns f32 writes f32.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = n; i-- > 0;) {
      if (!by_bn[i] || bf16[i] || !is_add(i) || nodes_[i].inputs[1] == kDataInput) continue;
      if (const auto r = static_cast<size_t>(nodes_[i].inputs[1]); bf16[r]) bf16[r] = false, changed = true;
    }
    for (size_t i = 0; i < n; ++i)
      if (!by_bn[i] && bf16[i] && !input_in(bf16, i)) bf16[i] = false, changed = true;
  }
  return bf16;
}

}  // namespace fastnn::graph
