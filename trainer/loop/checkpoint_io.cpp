#include "trainer/loop/checkpoint_io.h"

#include <map>

#include "core/check.h"
#include "core/logging.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/finetune.h"

namespace fastnn::loop {
namespace {

void copy_into(graph::NamedTensor& v, const ckpt::ArrayView& a, const std::string& source) {
  if (a.shape != v.value.shape())
    throw FormatError(str(source, ": array ", a.name, " has shape ", ckpt::shape_string(a.shape), ", the model ",
                          ckpt::shape_string(v.value.shape())));
  ckpt::to_f32(a, v.value.data<float>(), static_cast<size_t>(v.value.numel()));
}

}  // namespace

std::vector<ckpt::ArrayView> weight_views(const graph::Graph& g) {
  std::vector<ckpt::ArrayView> out;
  for (const graph::NamedTensor& v : g.variables()) {
    FASTNN_CHECK(v.value.dtype() == DType::kF32, "checkpoints of ", v.value.describe(), " are not supported yet");
    out.push_back(ckpt::f32_view(v.name, v.value.shape(), v.value.data<float>(), static_cast<size_t>(v.value.numel())));
  }
  return out;
}

void restore_weights(graph::Graph& g, std::span<const ckpt::ArrayView> arrays, const std::string& source) {
  std::map<std::string, const ckpt::ArrayView*> by_name;
  for (const ckpt::ArrayView& a : arrays) by_name[a.name] = &a;
  for (graph::NamedTensor& v : g.variables()) {
    auto it = by_name.find(v.name);
    if (it == by_name.end()) throw FormatError(str(source, ": no array named ", v.name));
    copy_into(v, *it->second, source);
  }
}

void load_finetune(graph::Graph& g, const std::string& path) {
  ckpt::LoadedCheckpoint c = ckpt::load_checkpoint(path, {.optimizer = false});
  std::map<std::string, std::vector<int64_t>> expected;
  std::vector<graph::NamedTensor> vars = g.variables();
  for (const graph::NamedTensor& v : vars) expected[v.name] = v.value.shape();
  const std::vector<ckpt::ArrayView> arrays = c.weights.arrays();
  const ckpt::FinetuneSelection sel = ckpt::select_for_finetune(arrays, expected);
  std::map<std::string, const ckpt::ArrayView*> by_name;
  for (const ckpt::ArrayView& a : sel.loaded) by_name[a.name] = &a;
  for (graph::NamedTensor& v : vars)
    if (auto it = by_name.find(v.name); it != by_name.end()) copy_into(v, *it->second, c.prefix);
  log_info(str("fine-tuning from ", c.prefix, ":\n", sel.summary()));
}

}  // namespace fastnn::loop
