// A trained model answering questions about new images: the checkpoint's model, restored on a step
// runner (runner/step_runner.h, any device), classifying batches of records (predict_inputs.h).
//
// Everything about the model comes from the checkpoint's metadata (CheckpointMeta.config, the JobConfig
// of the run): model_name, preprocessing_name (else the model's preset, run_setup.h's rule), the class
// count (num_classes when the run set it, else the dataset's manifest, else the length of the
// checkpoint's "*/logits/biases" array), batch_size (unless given), labels_offset. The network and its
// input geometry are the run's own `net {}` when its config has one (a model of the user's; its name
// then is the net's), else the zoo model's at its default size and channels, as `fastnn train` used.
// Preprocessing is the preset's eval variant through the pipeline's own mapper (pipeline/preprocess.h),
// so a shard record is classified from exactly the values `fastnn eval` feeds the model; the forward is
// the runner's evaluate() (eval mode: moving BN statistics, no dropout) on an inference graph (no
// gradient buffers, layers sharing buffers, nothing reallocated when the batch size changes; bitwise
// the training graph's logits), in slices of ModelInfo::forward_batch images (forward_batch.h: on the CPU
// a memory-bound network's batch is sliced to stay in the L3 cache), then a softmax of the logits in double
// precision.
// Class names: the checkpoint's class map (trainer/checkpoint/checkpoint_classes.h: the names `fastnn
// train` recorded, else labels.txt beside the checkpoint or the run's dataset's), when it has exactly
// num_classes names; else none. A map contradicted beside the checkpoint is a ConfigError.
// Top-k: the k largest logits, ties to the lower class id (`fastnn eval` counts a tie as a hit, the only
// way the two can disagree; tied float logits do not happen in practice).
// Embeddings (PredictorOptions::embeddings): the features feeding the classifier, i.e. the output of
// the layer the logits layer reads (a dropout before it is passed over: the identity in eval mode),
// flattened to one float32 row per image. No zoo model has a separate embedding layer, so these
// penultimate features are its embedding (`fastnn predict --embeddings`, `fastnn serve`'s /v1/embed).
// Threading: one thread drives a Predictor; decoding runs in parallel on oneTBB inside classify().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "schemas/job_config.pb.h"
#include "trainer/inference/predict_inputs.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::checkpoint {
struct LoadedCheckpoint;
}

namespace fastnn::inference {

struct PredictorOptions {
  std::string device = "auto";  // cpu, cuda, auto (the config field's values)
  int batch_size = 0;           // 0: the checkpoint run's batch_size
  // Images per forward, at most batch_size: a batch is forwarded in slices of this many. 0 picks: on the
  // CPU cpu_forward_batch (forward_batch.h: slices that keep a memory-bound network's layers in the L3
  // cache), elsewhere the whole batch.
  int forward_batch = 0;
  int top_k = 5;                // clamped to the class count
  bool embeddings = false;      // fill Prediction::embedding
  int local_rank = 0;           // under mpirun: picks the GPU (local_rank % device count)
  // Empty: the run's precision (config field `precision`; the CPU computes f32 whatever it says). fp32,
  // fp16, bf16, auto: as that field on a GPU. On the CPU fp32 or auto is f32, and bf16 runs the
  // convolutions folded with a batch norm in bfloat16 (ops/conv_bn_fold_dnnl.cpp), refused (ConfigError)
  // without bf16 instructions or where the model has no such convolution; fp16 is refused.
  std::string precision;
  // How many images this predictor's job classifies in its life (predict: all its inputs, on every rank,
  // so that the ranks choose their kernels as one process does), 0 when unbounded (serve) or unknown. Kernels whose faster form costs a one-off setup take it only where that
  // many images repay it (StepRunnerOptions::job_images).
  int64_t job_images = 0;
};

struct ModelInfo {
  std::string checkpoint;  // the prefix loaded
  int64_t step = 0;
  std::string model_name, preset;
  int num_classes = 0, height = 0, width = 0, channels = 0;
  std::vector<std::string> class_names;  // empty or num_classes names
  std::string class_names_origin;        // where they were read ("runs/x/ckpt-200.meta.pbtxt")
  std::string device;                    // "cpu f32", "cuda:0 f16"
  std::string input_layout;              // the model's input tensor: "NCHW" or "NHWC" (set by Predictor)
  int forward_batch = 0;                 // images per forward, at most the batch (set by Predictor)
  std::string embedding_layer;           // the layer whose output is the embedding (set by Predictor)
  int64_t embedding_size = 0;
  JobConfig config;
};

struct Prediction {
  std::string path;
  int64_t record = -1;   // TFRecord record index; -1 for an image file
  int64_t line = -1;     // base64-TSV line number (1-based); -1 otherwise
  int64_t target = -1;   // the record's or TSV line's label (labels_offset applied); -1 for an image file
  std::vector<std::pair<int, double>> topk;  // (class id, probability), best first
  std::vector<float> embedding;              // embedding_size floats when PredictorOptions::embeddings
  int label() const { return topk.front().first; }
};

// The model a checkpoint holds, from its metadata (the rules above): everything but `device`.
// FormatError when the metadata has no job config with a model_name. Also used by `fastnn export`.
ModelInfo describe_checkpoint(const checkpoint::LoadedCheckpoint& checkpoint);

// The network `model` runs: the checkpoint's own layers when its job config has a net {}, else the zoo
// model `model_name` built with `zoo_options`. Also used by `fastnn export`.
NetDef model_net(const ModelInfo& model, const zoo::ZooOptions& zoo_options);

// ", forwarded 4 at a time" when model.forward_batch is below `batch`, else "": for the command's first line.
std::string forward_batch_note(const ModelInfo& model, int batch);

// The k best classes of one row of logits with their softmax probabilities (double precision).
std::vector<std::pair<int, double>> top_k_softmax(const float* logits, int classes, int k);

class Predictor {
 public:
  // checkpoint: a prefix, file or run directory (its latest), as load_checkpoint takes.
  Predictor(const std::string& checkpoint, const PredictorOptions& options = {});
  ~Predictor();
  const ModelInfo& model() const;
  int batch_size() const;

  // Classifies up to batch_size() items, in order. An item that cannot be decoded (or arrived with an
  // error) goes to on_bad(item, message) and gets no prediction; without on_bad it throws FormatError
  // naming its path (and record).
  using BadInput = std::function<void(const InputItem& item, const std::string& message)>;
  std::vector<Prediction> classify(std::span<const InputItem> items, const BadInput& on_bad = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::inference
