// Fine-tuning selection (by name, scope and shape) and the optimizer-state adapter.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/checkpoint/finetune.h"
#include "trainer/checkpoint/optimizer_state.h"
#include "core/safetensors.h"

namespace fastnn::checkpoint {
namespace {

std::vector<std::string> names(const std::vector<ArrayView>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(a.name);
  return out;
}

std::string reason(const FinetuneSelection& s, const std::string& name) {
  for (const auto& k : s.skipped)
    if (k.name == name) return k.reason;
  return "(not skipped)";
}

TEST(CheckpointFinetune, SelectsByNameShapeAndScope) {
  // A checkpoint of a 1001-class ImageNet model with an auxiliary head.
  std::vector<float> buf(1001 * 8);
  const std::vector<ArrayView> ckpt = {
      f32_view("conv1/weights", {3, 3, 3, 8}, buf.data(), 216),
      f32_view("conv1/BatchNorm/beta", {8}, buf.data(), 8),
      f32_view("logits/weights", {8, 1001}, buf.data(), 8 * 1001),
      f32_view("logits/biases", {1001}, buf.data(), 1001),
      f32_view("aux_logits/weights", {8, 1001}, buf.data(), 8 * 1001),
      f32_view("global_step_extra", {1}, buf.data(), 1),
  };
  // The model being fine-tuned: 10 classes, a new layer the checkpoint does not have.
  const std::map<std::string, std::vector<int64_t>> model = {
      {"conv1/weights", {3, 3, 3, 8}}, {"conv1/BatchNorm/beta", {8}}, {"logits/weights", {8, 10}},
      {"logits/biases", {10}},         {"aux_logits/weights", {8, 10}}, {"new_layer/weights", {4}}};

  const FinetuneSelection s = select_for_finetune(ckpt, model);
  EXPECT_EQ(names(s.loaded), (std::vector<std::string>{"conv1/weights", "conv1/BatchNorm/beta"}));
  EXPECT_EQ(reason(s, "logits/weights"), "shape [8, 1001] in checkpoint, [8, 10] in model");
  EXPECT_EQ(reason(s, "logits/biases"), "shape [1001] in checkpoint, [10] in model");
  EXPECT_EQ(reason(s, "global_step_extra"), "not in model");
  EXPECT_EQ(s.skipped.size(), 4u);
  EXPECT_EQ(s.missing, (std::vector<std::string>{"aux_logits/weights", "logits/biases", "logits/weights",
                                                 "new_layer/weights"}));
  // The loaded views are the checkpoint's bytes.
  EXPECT_EQ(s.loaded[0].bytes.data(), ckpt[0].bytes.data());

  // Same class count, but the head excluded by scope; a prefix scope catches both heads.
  std::map<std::string, std::vector<int64_t>> same = model;
  same["logits/weights"] = {8, 1001};
  same["logits/biases"] = {1001};
  same["aux_logits/weights"] = {8, 1001};
  const std::vector<std::string> scopes = {"logits/"};
  const FinetuneSelection e = select_for_finetune(ckpt, same, scopes);
  EXPECT_EQ(names(e.loaded), (std::vector<std::string>{"conv1/weights", "conv1/BatchNorm/beta", "aux_logits/weights"}));
  EXPECT_EQ(reason(e, "logits/weights"), "excluded by scope 'logits/'");
  const std::vector<std::string> wide = {"conv1/BatchNorm", "aux"};
  const FinetuneSelection w = select_for_finetune(ckpt, same, wide);
  EXPECT_EQ(names(w.loaded), (std::vector<std::string>{"conv1/weights", "logits/weights", "logits/biases"}));
  EXPECT_EQ(reason(w, "aux_logits/weights"), "excluded by scope 'aux'");
  const std::string summary = w.summary();
  EXPECT_NE(summary.find("loaded 3 arrays, skipped 3"), std::string::npos) << summary;
  EXPECT_NE(summary.find("skipped conv1/BatchNorm/beta: excluded by scope 'conv1/BatchNorm'"), std::string::npos)
      << summary;
}

TEST(CheckpointFinetune, OptimizerStateAdapterIsExact) {
  const std::vector<NamedArray> state = {{"w/adam_m", {1.5f, -0.0f, 1e-30f}}, {"adam/beta1_power", {0.81f}}, {"e", {}}};
  const std::vector<ArrayView> views = optimizer_state_views(state);
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(views[2].shape, (std::vector<int64_t>{0}));
  const std::string bytes = encode_safetensors(views);
  const auto file = SafetensorsFile::parse(bytes, "opt");
  std::vector<NamedArray> back = optimizer_state_from(file);
  ASSERT_EQ(back.size(), 3u);
  std::sort(back.begin(), back.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  EXPECT_EQ(back[0].name, "adam/beta1_power");
  EXPECT_EQ(back[0].data, state[1].data);
  EXPECT_EQ(back[2].data, state[0].data);
  const int32_t i[] = {1};
  const std::vector<ArrayView> bad = {typed_view("count", DType::kI32, {1}, i, 4)};
  const std::string bad_bytes = encode_safetensors(bad);
  EXPECT_THROW(optimizer_state_from(SafetensorsFile::parse(bad_bytes, "opt")), FormatError);
}

}  // namespace
}  // namespace fastnn::checkpoint
