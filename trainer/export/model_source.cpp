#include "trainer/export/model_source.h"

#include <charconv>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "pipeline/preset.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/head/head_config.h"
#include "trainer/loop/preset_fields.h"
#include "trainer/loop/run_setup.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::onnx_export {
namespace {

// Shortest decimals that read back as the same floats ("0.0078125,0.0078125").
std::string join(const float* v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v[i]);
    if (i) s += ',';
    s.append(buf, r.ptr);
  }
  return s;
}

// The evaluation geometry of a resolved preset, in words (what a caller must do before the mean / scale).
std::string eval_geometry(const pipeline::PreprocessConfig& c) {
  const std::string out = str(c.height, "x", c.width);
  switch (pipeline::parse_preset(c.preset)) {
    case pipeline::PresetKind::kLenet:
    case pipeline::PresetKind::kCifarnet:
      return str("centre crop or zero-pad to ", out, " (no resampling)");
    case pipeline::PresetKind::kInception:
      return str("central crop of ", c.crop_pct * 100, "% of each side, bilinear resize to ", out);
    case pipeline::PresetKind::kVgg:
      return str("bilinear resize of the shorter side to ", c.eval_resize, ", centre crop ", out);
    case pipeline::PresetKind::kTorchvision:
      return str("bilinear resize of the shorter side to ", c.eval_resize,
                 " (the longer side truncated, torchvision's Resize), centre crop ", out,
                 " (offsets rounded half to even, torchvision's CenterCrop)");
  }
  return "";
}

}  // namespace

struct ModelSource::Impl {
  inference::ModelInfo info;
  NetDef net;
  pipeline::PreprocessConfig pre;  // resolved
  pipeline::OutputFormat format;
  std::optional<checkpoint::LoadedCheckpoint> checkpoint;
  std::map<std::string, std::vector<float>> initial;  // zoo model: the initialised variables
  std::unique_ptr<inference::HeadLogits> head;        // an embedding model's classes
  uint64_t seed = 0;
};

ModelSource::ModelSource(const SourceOptions& o) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (o.checkpoint.empty() == o.model_name.empty())
    throw ConfigError("export: give either a checkpoint or a model_name (a zoo model, initialised), not both");
  inference::ModelInfo& m = s.info;
  if (!o.checkpoint.empty()) {
    if (o.num_classes || o.image_size) throw ConfigError("export: num_classes and image_size come from the checkpoint");
    s.checkpoint = checkpoint::load_checkpoint(o.checkpoint, {.optimizer = false});
    m = inference::describe_checkpoint(*s.checkpoint);
  } else {
    const zoo::ZooModel& zm = zoo::zoo_model(o.model_name);
    m.model_name = o.model_name;
    m.num_classes = o.num_classes > 0 ? o.num_classes : zm.default_classes;
    m.height = m.width = o.image_size > 0 ? o.image_size : zm.default_size;
    m.channels = zm.default_channels;
    m.preset = loop::preset_for_model(o.model_name);
    s.seed = o.seed;
  }
  const bool embedding_model = s.checkpoint && head::uses_head(m.config);
  // As the run built it (a checkpoint's batch norm epsilon, say), without the training-only aux head.
  zoo::ZooOptions zo = loop::model_zoo_options(
      s.checkpoint ? m.config : JobConfig(),
      static_cast<int>(embedding_model ? head::net_outputs(m.config, m.num_classes) : m.num_classes), m.height, m.width,
      m.channels);
  zo.aux_logits = false;
  s.net = inference::model_net(m, zo);
  if (embedding_model) {
    s.net = head::with_embedding(std::move(s.net));
    s.head = inference::load_head_logits(*s.checkpoint, m.config, m.num_classes);
  }
  pipeline::PreprocessConfig p;
  p.preset = m.preset;
  loop::apply_preset_fields(loop::preset_fields(m.config), p);  // a checkpoint run's mean, std and crop_pct
  p.train = false;
  p.height = m.height;
  p.width = m.width;
  p.channels = m.channels;
  s.pre = pipeline::resolve_preset(p);
  s.format = pipeline::output_format(s.pre);
  if (!s.checkpoint) {
    const graph::Graph g(s.net, {.batch_size = 1, .seed = s.seed});
    for (const graph::NamedTensor& v : g.variables())
      s.initial[v.name].assign(v.value.data<float>(), v.value.data<float>() + v.value.numel());
  }
}

ModelSource::~ModelSource() = default;
const inference::ModelInfo& ModelSource::info() const { return impl_->info; }
const NetDef& ModelSource::net() const { return impl_->net; }
const inference::HeadLogits* ModelSource::head() const { return impl_->head.get(); }
float ModelSource::mean(int c) const { return impl_->format.mean[c]; }
float ModelSource::scale(int c) const { return impl_->format.inv_std[c]; }

std::vector<float> ModelSource::value(const std::string& name, const Shape& shape) const {
  const Impl& s = *impl_;
  if (s.checkpoint) {
    const checkpoint::ArrayView* a = s.checkpoint->weights.find(name);
    if (!a) throw FormatError(str(s.checkpoint->prefix, ": no array named ", name));
    if (a->shape != shape)
      throw FormatError(str(s.checkpoint->prefix, ": array ", name, " has shape ", checkpoint::shape_string(a->shape),
                            ", the model ", checkpoint::shape_string(shape)));
    return checkpoint::to_f32(*a);
  }
  auto it = s.initial.find(name);
  FASTNN_CHECK(it != s.initial.end(), "export: no variable ", name);
  return it->second;
}

graph::Graph ModelSource::make_graph(int64_t batch) const {
  graph::Graph g(impl_->net, {.batch_size = batch, .seed = impl_->seed});
  for (const graph::NamedTensor& v : g.variables()) {
    const std::vector<float> x = value(v.name, v.value.shape());
    Tensor t = v.value;
    std::copy(x.begin(), x.end(), t.data<float>());
  }
  return g;
}

std::vector<std::pair<std::string, std::string>> ModelSource::metadata(bool float16) const {
  const Impl& s = *impl_;
  const inference::ModelInfo& m = s.info;
  std::vector<std::pair<std::string, std::string>> md = {
      {"fastnn.model_name", m.model_name},
      {"fastnn.source", s.checkpoint ? m.checkpoint : str("initialised (seed ", s.seed, "), not trained")},
      {"fastnn.step", str(m.step)},
      {"fastnn.weights", float16 ? "float16" : "float32"},
      {"fastnn.num_classes", str(m.num_classes)},
      {"fastnn.input_name", "images"},
      {"fastnn.input_layout", "NCHW"},
      {"fastnn.input_height", str(m.height)},
      {"fastnn.input_width", str(m.width)},
      {"fastnn.input_channels", str(m.channels)},
      {"fastnn.input_color", m.channels == 1 ? "grayscale" : m.channels == 3 ? "RGB" : str(m.channels, " channels")},
      {"fastnn.input_mean", join(s.format.mean, m.channels)},
      {"fastnn.input_scale", join(s.format.inv_std, m.channels)},
      {"fastnn.input_formula", "images[n, c, y, x] = (pixel[y, x, c] - mean[c]) * scale[c], pixel in 0..255"},
      {"fastnn.preprocessing", m.preset},
      {"fastnn.resize", eval_geometry(s.pre)},
      {"fastnn.output_name", "logits"},
      {"fastnn.output", "logits [batch, num_classes], before softmax; class id = column"},
  };
  if (s.checkpoint) md.push_back({"fastnn.labels_offset", str(m.config.labels_offset())});
  if (s.head) {
    const head::MarginSpec& spec = s.head->spec();
    md.push_back({"fastnn.head", str(m.config.loss_type(), ", ", s.head->classes(), " classes of ", s.head->emb_dim(),
                                     "-d embeddings: logits = ",
                                     spec.normalized ? str(spec.scale, " * cos(embedding, class row)")
                                                     : std::string("embedding . class row"))});
    md.push_back({"fastnn.embedding_output", str("embedding [batch, ", s.head->emb_dim(), "]")});
  }
  if (!m.class_names.empty()) md.push_back({"fastnn.class_names", nlohmann::json(m.class_names).dump()});
  return md;
}

}  // namespace fastnn::onnx_export
