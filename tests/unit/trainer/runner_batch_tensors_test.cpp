// The hop from the pipeline to the step makes no copy: wrap_batch() hands the batch's own buffer to the
// step as the images tensor, the step reads it there (address and content checks through a layer
// observer that sees the graph's input).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tfrecord.h"
#include "pipeline/dataset.h"
#include "trainer/runner/batch_tensors.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

// 2 shards of 8 records; each record is the label as text; the sample is filled with label / 10.
std::vector<std::string> write_shards(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (int f = 0; f < 2; ++f) {
    paths.push_back((dir / ("train-" + std::to_string(f) + ".tfrecord")).string());
    TFRecordWriter w(paths.back());
    for (int i = 0; i < 8; ++i) w.write(std::to_string((f * 8 + i) % 10));
    w.close();
  }
  return paths;
}

pipeline::Dataset mlp_dataset(const std::vector<std::string>& paths) {
  pipeline::BatchSpec spec{.height = 28, .width = 28, .channels = 1, .dtype = DType::kF32,
                           .layout = Layout::kNCHW};
  auto mapper = pipeline::make_function_mapper(spec, [](std::string_view record, const pipeline::SampleContext&,
                                                       void* slot, int32_t* label) {
    *label = std::stoi(std::string(record));
    float* x = static_cast<float*>(slot);
    for (int i = 0; i < 28 * 28; ++i) x[i] = static_cast<float>(*label) / 10.0f;
  });
  auto ds = pipeline::Dataset::from_files(paths, std::vector<int64_t>(paths.size(), 8));
  ds.map_and_batch(mapper, 4, 1, true);
  return ds;
}

// Sees the graph's input tensor when the first layer runs.
class InputSpy final : public graph::LayerObserver {
 public:
  explicit InputSpy(graph::Graph& g) : g_(g) {}
  void layer_begin(size_t node, bool backward) override {
    if (!backward && node == 0 && seen_ == nullptr) seen_ = g_.input().raw();
  }
  void layer_end(size_t, bool) override {}
  const void* seen_ = nullptr;

 private:
  graph::Graph& g_;
};

TEST(BatchTensors, TheStepReadsThePipelinesOwnBuffer) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fastnn_zero_copy";
  const pipeline::Dataset ds = mlp_dataset(write_shards(dir));
  StepRunnerOptions o;
  o.batch_size = 4;
  o.optimizer.optimizer = "sgd";
  auto runner = make_step_runner(zoo::build_net("mlp", {.num_classes = 10}), o);
  InputSpy spy(runner->graph());
  runner->set_layer_observer(&spy);

  auto it = ds.make_iterator();
  pipeline::BatchHandle b;
  ASSERT_TRUE(it->next(&b));
  const void* buffer = b->data();
  const int32_t first_label = b->labels()[0];
  BatchTensors t = wrap_batch(std::move(b));
  EXPECT_FALSE(b);  // the handle moved into the tensors
  EXPECT_EQ(t.images.raw(), buffer);  // no copy into the tensor
  EXPECT_EQ(t.images.shape(), (Shape{4, 1, 28, 28}));
  EXPECT_EQ(t.labels.data<int32_t>()[0], first_label);
  EXPECT_FLOAT_EQ(t.images.data<float>()[0], static_cast<float>(first_label) / 10.0f);

  runner->train(t.images, t.labels, 0, 0.01f);
  EXPECT_EQ(spy.seen_, buffer);  // the step's first layer read the pipeline's buffer itself
  runner->set_layer_observer(nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fastnn::runner
