#include "trainer/inference/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "core/check.h"
#include "core/manifest.h"
#include "core/resources.h"
#include "pipeline/preprocess.h"
#include "trainer/checkpoint/checkpoint_classes.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/head/head_config.h"
#include "trainer/inference/forward_batch.h"
#include "trainer/inference/head_logits.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/loop/preset_fields.h"
#include "trainer/loop/run_setup.h"
#include "trainer/runner/step_runner.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/zoo/zoo.h"
#ifdef FASTNN_HAVE_CUDA
#include "trainer/cuda/runtime.h"
#endif

namespace fastnn::inference {
namespace fs = std::filesystem;
namespace {

// The class count when the run did not set num_classes: its dataset's manifest, else the logits' bias.
int class_count(const JobConfig& c, const checkpoint::LoadedCheckpoint& l) {
  if (c.has_num_classes()) return static_cast<int>(c.num_classes());
  if (!c.dataset_dir().empty() && fs::exists(fs::path(c.dataset_dir()) / kManifestFileName))
    return static_cast<int>(read_manifest(c.dataset_dir()).num_classes());
  for (const checkpoint::ArrayView& a : l.weights.arrays()) {
    const std::string& n = a.name;
    if (n.size() >= 14 && n.compare(n.size() - 14, 14, "logits/biases") == 0 && a.shape.size() == 1 &&
        n.find("Aux") == std::string::npos)
      return static_cast<int>(a.shape[0]);
  }
  throw ConfigError(str(l.prefix, ": the run set no num_classes, its dataset ", c.dataset_dir(),
                        " has no manifest.json here, and the checkpoint has no logits/biases array to count classes"));
}

// Rows [at, at + part's rows) of `all`, a [total, columns] f32 tensor made on the first call.
void copy_rows(const Tensor& part, int64_t at, int64_t total, Tensor& all) {
  const int64_t columns = part.numel() / part.shape()[0];
  if (!all.defined()) all = Tensor::empty({total, columns}, DType::kF32);
  std::memcpy(all.data<float>() + at * columns, part.data<float>(), static_cast<size_t>(part.numel()) * sizeof(float));
}

Tensor host_logits(const Tensor& t) {
#ifdef FASTNN_HAVE_CUDA
  if (t.device() != Device::kCpu) return cuda::to_host(t).to(DType::kF32);
#endif
  return t.dtype() == DType::kF32 ? t : t.to(DType::kF32);
}

}  // namespace

std::vector<std::pair<int, double>> top_k_softmax(const float* z, int classes, int k) {
  FASTNN_CHECK(classes > 0, "top_k_softmax: no class");
  k = std::clamp(k, 1, classes);
  double mx = z[0];
  for (int j = 1; j < classes; ++j) mx = std::max(mx, static_cast<double>(z[j]));
  double sum = 0;
  for (int j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(z[j]) - mx);
  std::vector<int> ids(static_cast<size_t>(classes));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [z](int a, int b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  std::vector<std::pair<int, double>> out;
  for (int i = 0; i < k; ++i) out.emplace_back(ids[static_cast<size_t>(i)], std::exp(static_cast<double>(z[ids[static_cast<size_t>(i)]]) - mx) / sum);
  return out;
}

ModelInfo describe_checkpoint(const checkpoint::LoadedCheckpoint& l) {
  if (!l.meta.has_config() || l.meta.config().model_name().empty())
    throw FormatError(str(l.prefix, ": the checkpoint's metadata holds no job config with a model_name"));
  ModelInfo m;
  m.config = l.meta.config();
  m.checkpoint = l.prefix;
  m.step = l.meta.step();
  m.model_name = loop::model_label(m.config);  // a net {} of the run's own: its name
  m.num_classes = class_count(m.config, l);
  if (m.config.has_net()) {
    const InputDef& in = m.config.net().input();
    m.height = in.height();
    m.width = in.width();
    m.channels = in.channels();
  } else {
    const zoo::ZooModel& zm = zoo::zoo_model(m.model_name);
    m.height = m.width = m.config.has_train_image_size() ? m.config.train_image_size() : zm.default_size;
    m.channels = zm.default_channels;
  }
  m.preset = m.config.preprocessing_name().empty() ? loop::preset_for_model(m.model_name) : m.config.preprocessing_name();
  // The checkpoint's class map (checkpoint::checkpoint_class_map refuses one contradicted beside it), as
  // names only when it has one per output.
  if (std::optional<ClassMap> map = checkpoint::checkpoint_class_map(l);
      map && static_cast<int>(map->names.size()) == m.num_classes) {
    m.class_names = std::move(map->names);
    m.class_names_origin = std::move(map->origin);
  }
  return m;
}

NetDef model_net(const ModelInfo& m, const zoo::ZooOptions& zoo_options) {
  return m.config.has_net() ? m.config.net() : zoo::build_net(m.model_name, zoo_options);
}

// The layer whose output feeds the logits layer, passing over dropout (the identity in eval mode).
std::string embedding_layer_of(const graph::NetPlan& plan) {
  const auto& nodes = plan.nodes();
  const graph::PlanNode* logits = &nodes[static_cast<size_t>(plan.logits_node())];
  FASTNN_CHECK(!logits->inputs.empty() && logits->inputs[0] != graph::kDataInput, "predict: the logits layer reads the images");
  const graph::PlanNode* n = &nodes[static_cast<size_t>(logits->inputs[0])];
  while (n->type == "dropout" && !n->inputs.empty() && n->inputs[0] != graph::kDataInput)
    n = &nodes[static_cast<size_t>(n->inputs[0])];
  return n->name;
}

namespace {

// --precision on the CPU: bf16 where the fast kernels have bf16 instructions; fp16 refused.
bool cpu_bf16_requested(const std::string& precision) {
  if (precision == "fp16")
    throw ConfigError("precision fp16: the CPU computes fp32 or bf16 (--precision bf16, where it has bf16 instructions)");
  if (precision != "bf16") return false;
  if (!ops::cpu_bf16_available())
    throw ConfigError(str("precision bf16 on the CPU needs oneDNN with bf16 instructions (AVX512_BF16 or AMX); "
                          "this CPU's kernels: ", ops::cpu_kernels_description()));
  return true;
}

// The folded convolutions that compute in bf16 (the "conv2d+batch_norm..." nodes of an inference plan, where
// fuse_conv_bn is off, with enough multiply-adds per input element to repay rounding it: ops/conv2d_dnnl.h);
// ConfigError when there is none, so that bf16 never silently means f32.
int check_bf16_folds(const graph::NetPlan& plan) {
  int folds = 0, in_bf16 = 0;
  for (const graph::PlanNode& n : plan.nodes()) {
    folds += n.op.find("conv2d+batch_norm") != std::string::npos;
    in_bf16 += n.kernel && n.kernel->signature().multiplies_in_bf16;
  }
  if (folds == 0)
    throw ConfigError(str("precision bf16 on the CPU computes the convolutions followed by a batch norm, in NHWC; ",
                          plan.net_name(), " has none here (data_format ",
                          plan.options().layout == Layout::kNHWC ? "NHWC" : "NCHW", ")"));
  if (in_bf16 == 0)
    throw ConfigError(str("precision bf16: none of ", plan.net_name(), "'s ", folds, " convolutions followed by a ",
                          "batch norm does the 64 multiply-adds per input element that repay rounding its input to ",
                          "bfloat16 (depthwise ones do 9); it would compute in f32 (--precision fp32)"));
  return in_bf16;
}

}  // namespace

struct Predictor::Impl {
  ModelInfo info;
  std::unique_ptr<HeadLogits> head;  // an embedding model's classes
  PredictorOptions options;
  int batch = 0;
  std::unique_ptr<runner::StepRunner> runner;
  std::shared_ptr<pipeline::SampleMapper> mapper;
  pipeline::BatchSpec spec;
  std::vector<pipeline::StageTimes> times;
  int64_t labels_offset = 0;
};

Predictor::Predictor(const std::string& checkpoint, const PredictorOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = options;
  checkpoint::LoadedCheckpoint l = checkpoint::load_checkpoint(checkpoint, {.optimizer = false});
  s.info = describe_checkpoint(l);
  ModelInfo& m = s.info;
  s.labels_offset = m.config.labels_offset();
  s.batch = options.batch_size > 0 ? options.batch_size : std::max(1, m.config.batch_size());
  if (options.top_k < 1) throw ConfigError(str("top_k must be at least 1, not ", options.top_k));
  if (options.forward_batch < 0 || options.forward_batch > s.batch)
    throw ConfigError(str("forward_batch ", options.forward_batch, " must be between 1 and the batch size ", s.batch,
                          " (predict's --batch_size, serve's --max_batch); 0 chooses it for the model"));

  JobConfig run = m.config;
  run.set_device(options.device);
  run.set_batch_size(s.batch);
  if (!options.precision.empty()) run.set_precision(options.precision);
  const runner::ComputeTarget target = runner::resolve_compute_target(run, options.local_rank);
  m.device = target.describe();
  runner::StepRunnerOptions o = runner::forward_only(runner::step_runner_options(run, target));
  o.cpu_bf16 = target.device == Device::kCpu && cpu_bf16_requested(options.precision);
  o.job_images = options.job_images;
  o.label_smoothing = 0;
  pipeline::PreprocessConfig p;
  p.preset = m.preset;
  loop::apply_preset_fields(loop::preset_fields(m.config), p);  // the run's mean, std and crop_pct
  p.train = false;
  p.height = m.height;
  p.width = m.width;
  p.channels = m.channels;
  p.label_offset = 0;  // image files carry label 0; labels_offset is applied to targets here
  {
    const pipeline::OutputFormat f = pipeline::output_format(pipeline::resolve_preset(p));
    std::copy(f.mean, f.mean + 4, o.input.mean);
    std::copy(f.inv_std, f.inv_std + 4, o.input.inv_std);
  }
  // An embedding model (the classifier head) is built as `fastnn train` built it: the zoo net with
  // emb_dim outputs and the embedding batch norm; its classes come from the head's rows.
  const bool embedding_model = head::uses_head(m.config);
  NetDef net = model_net(m, loop::model_zoo_options(m.config, static_cast<int>(head::net_outputs(m.config, m.num_classes)),
                                                     m.height, m.width, m.channels));
  if (embedding_model) {
    net = head::with_embedding(std::move(net));
    s.head = load_head_logits(l, m.config, m.num_classes);
  }
  // Forward only: an inference graph (no gradient buffers, layers sharing buffers, no reallocation
  // when the batch size changes) that keeps the embedding layer's output readable. An embedding
  // model's embedding is its output (PLSC serves the same); otherwise the features feeding the classifier.
  const graph::NetPlan layout = graph::NetPlan::make(net, graph::PlanOptions{1, DType::kF32, Device::kCpu, nullptr, o.fuse});
  m.forward_batch = options.forward_batch > 0 ? options.forward_batch
                    : target.device == Device::kCpu
                        ? static_cast<int>(cpu_forward_batch(layout, s.batch, MachineResources::detect().l3_cache_bytes).images)
                        : s.batch;
  o.batch_size = m.forward_batch;  // the graph is sized for one forward, not the whole batch
  m.embedding_layer = embedding_model ? layout.nodes()[static_cast<size_t>(layout.logits_node())].name : embedding_layer_of(layout);
  {
    const Shape& shape = layout.nodes()[static_cast<size_t>(layout.find(m.embedding_layer))].output_shape;
    m.embedding_size = 1;
    for (size_t d = 1; d < shape.size(); ++d) m.embedding_size *= shape[d];
  }
  o.inference = true;
  o.draw_variables = false;  // the checkpoint replaces them all next (or the load fails)
  if (options.embeddings) o.keep_layers = {m.embedding_layer};
  s.runner = runner::make_step_runner(net, o);
  if (o.cpu_bf16) m.device = str("cpu bf16 (", check_bf16_folds(s.runner->graph().plan()), " convolutions)");
  s.runner->set_host_variables(loop::checkpoint_variables(s.runner->variables(), l.weights.arrays(), l.prefix));
  const runner::BatchFormat bf = s.runner->batch_format();
  p.dtype = bf.dtype;
  p.layout = bf.layout;
  s.mapper = pipeline::make_preprocessor(p);
  s.spec = s.mapper->spec();
  m.input_layout = bf.layout == Layout::kNCHW ? "NCHW" : "NHWC";
  const int workers = tbb::this_task_arena::max_concurrency();
  s.mapper->prepare(workers);
  s.times.resize(static_cast<size_t>(workers));
}

std::string forward_batch_note(const ModelInfo& model, int batch) {
  return model.forward_batch < batch ? str(", forwarded ", model.forward_batch, " at a time") : std::string();
}

Predictor::~Predictor() = default;
const ModelInfo& Predictor::model() const { return impl_->info; }
int Predictor::batch_size() const { return impl_->batch; }

std::vector<Prediction> Predictor::classify(std::span<const InputItem> items, const BadInput& on_bad) {
  Impl& s = *impl_;
  FASTNN_CHECK(items.size() <= static_cast<size_t>(s.batch), "classify: ", items.size(), " items, batch_size is ", s.batch);
  const size_t n = items.size();
  const size_t sample = s.spec.sample_bytes();
  std::vector<std::byte> pixels(n * sample);
  std::vector<int32_t> labels(n, 0);
  std::vector<std::string> errors(n);
  tbb::parallel_for(size_t{0}, n, [&](size_t i) {
    const InputItem& it = items[i];
    if (!it.error.empty()) {
      errors[i] = it.error;
      return;
    }
    const int worker = std::max(0, tbb::this_task_arena::current_thread_index());
    pipeline::SampleContext ctx;
    ctx.index = i;
    ctx.worker = worker;
    ctx.times = &s.times[static_cast<size_t>(worker)];
    try {
      s.mapper->map(it.bytes, ctx, pixels.data() + i * sample, &labels[i]);
    } catch (const Error& e) {
      errors[i] = e.what();
      if (errors[i].empty()) errors[i] = "cannot decode";
    }
  });
  std::vector<size_t> good;
  for (size_t i = 0; i < n; ++i) {
    if (errors[i].empty()) {
      good.push_back(i);
      continue;
    }
    const InputItem& it = items[i];
    if (!on_bad)
      throw FormatError(it.record >= 0 ? str(it.path, ": record ", it.record, ": ", errors[i])
                        : it.line >= 0 ? str(it.path, ":", it.line, ": ", errors[i])
                                       : str(it.path, ": ", errors[i]));
    on_bad(it, errors[i]);
  }
  std::vector<Prediction> out;
  if (good.empty()) return out;
  const auto g = static_cast<int64_t>(good.size());
  const bool nchw = s.spec.layout == Layout::kNCHW;
  graph::Graph& graph = s.runner->graph();
  // Forwarded in slices of forward_batch images (forward_batch.h); each slice's rows are copied out
  // before the next forward overwrites the graph's outputs.
  const int64_t slice = std::min<int64_t>(s.info.forward_batch, g);
  Tensor logits, features;
  for (int64_t at = 0; at < g; at += slice) {
    const int64_t n = std::min(slice, g - at);
    const Shape shape = nchw ? Shape{n, s.spec.channels, s.spec.height, s.spec.width}
                             : Shape{n, s.spec.height, s.spec.width, s.spec.channels};
    Tensor images = Tensor::empty(shape, s.spec.dtype, Device::kCpu, nchw ? Layout::kNCHW : Layout::kNHWC);
    auto* dst = static_cast<std::byte*>(images.raw());
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + j * sample, pixels.data() + good[static_cast<size_t>(at + j)] * sample, sample);
    if (graph.batch_size() != n) graph.set_batch_size(n);
    s.runner->evaluate(images, Tensor::zeros({n}, DType::kI32));
    copy_rows(host_logits(graph.output(0)), at, g, logits);
    if (s.options.embeddings) copy_rows(host_logits(graph.layer_output(s.info.embedding_layer)), at, g, features);
  }
  if (s.head) {  // the net's output is the embedding: the head's logits over its rows
    Tensor z = Tensor::empty({g, s.head->classes()}, DType::kF32);
    s.head->compute(logits.data<float>(), g, z.data<float>());
    logits = std::move(z);
  }
  const float* z = logits.data<float>();
  const int classes = s.info.num_classes;
  if (s.options.embeddings)
    FASTNN_CHECK(features.numel() == g * s.info.embedding_size, "predict: embedding layer ", s.info.embedding_layer, " has ",
                 features.numel(), " values for ", g, " images of ", s.info.embedding_size);
  for (size_t j = 0; j < good.size(); ++j) {
    const InputItem& it = items[good[j]];
    Prediction p;
    p.path = it.path;
    p.record = it.record;
    p.line = it.line;
    if (it.record >= 0 || it.line >= 0) p.target = labels[good[j]] - s.labels_offset;
    p.topk = top_k_softmax(z + static_cast<int64_t>(j) * classes, classes, s.options.top_k);
    if (features.defined()) {
      const float* f = features.data<float>() + static_cast<int64_t>(j) * s.info.embedding_size;
      p.embedding.assign(f, f + s.info.embedding_size);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace fastnn::inference
