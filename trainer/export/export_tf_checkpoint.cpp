#include "trainer/export/export_tf_checkpoint.h"

#include <map>
#include <optional>
#include <vector>

#include "core/check.h"
#include "core/tf_checkpoint/bundle_writer.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/tf_layout.h"
#include "trainer/graph/graph.h"
#include "trainer/inference/predictor.h"
#include "trainer/loop/run_setup.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::tf_export {

TfExportReport export_tf_checkpoint(const onnx_export::SourceOptions& o, const std::string& prefix) {
  if (o.checkpoint.empty() == o.model_name.empty())
    throw ConfigError("export: give either a checkpoint or a model_name (a zoo model, initialised), not both");
  TfExportReport rep;
  rep.prefix = prefix;
  std::optional<checkpoint::LoadedCheckpoint> l;
  inference::ModelInfo m;  // a zoo model's: its name; a checkpoint's: what its metadata says
  if (!o.checkpoint.empty()) {
    if (o.num_classes || o.image_size) throw ConfigError("export: num_classes and image_size come from the checkpoint");
    l = checkpoint::load_checkpoint(o.checkpoint, {.optimizer = false});
    if (l->meta.shard_files_size() > 0)
      throw ConfigError(str("export: ", l->prefix, " holds a model-parallel classifier head (rows in shard files), "
                            "which a TensorFlow checkpoint of the TF-slim network cannot hold"));
    m = inference::describe_checkpoint(*l);
    rep.step = l->meta.step();
    rep.source = l->prefix;
  } else {
    const zoo::ZooModel& zm = zoo::zoo_model(o.model_name);
    m.model_name = o.model_name;
    m.num_classes = o.num_classes > 0 ? o.num_classes : zm.default_classes;
    m.height = m.width = o.image_size > 0 ? o.image_size : zm.default_size;
    m.channels = zm.default_channels;
    rep.source = str("initialised (seed ", o.seed, ")");
  }
  rep.model_name = m.model_name;
  rep.num_classes = m.num_classes;
  rep.image_size = m.height;
  // The net as training builds it, so the auxiliary head's variables are there too.
  const NetDef net = inference::model_net(
      m, {.num_classes = m.num_classes, .height = m.height, .width = m.width, .channels = m.channels});
  std::map<std::string, std::vector<float>> initial;
  if (!l) {
    const graph::Graph g(net, {.batch_size = 1, .seed = o.seed});
    for (const graph::NamedTensor& v : g.variables())
      initial[v.name].assign(v.value.data<float>(), v.value.data<float>() + v.value.numel());
  }
  std::vector<std::vector<float>> values;  // TF layout, alive until written
  std::vector<checkpoint::ArrayView> views;
  std::vector<std::string> missing;
  const std::vector<checkpoint::TfVariable> vars = checkpoint::tf_variables(net);
  values.reserve(vars.size());
  for (const checkpoint::TfVariable& v : vars) {
    std::vector<float> fastnn;
    if (l) {
      const checkpoint::ArrayView* a = l->weights.find(v.name);
      if (!a) {
        missing.push_back(v.name);
        continue;
      }
      if (a->shape != v.shape)
        throw FormatError(str(l->prefix, ": array ", v.name, " has shape ", checkpoint::shape_string(a->shape), ", the model ",
                              checkpoint::shape_string(v.shape)));
      fastnn = checkpoint::to_f32(*a);
    } else {
      fastnn = initial.at(v.name);
    }
    std::vector<float>& tf = values.emplace_back(fastnn.size());
    checkpoint::fastnn_to_tf(v, fastnn.data(), tf.data());
    views.push_back(checkpoint::f32_view(v.name, v.tf_shape(), tf.data(), tf.size()));
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += " " + m;
    throw FormatError(str(l->prefix, ": ", missing.size(), " variable(s) of ", rep.model_name, " are not in it:", list));
  }
  const int64_t step = rep.step;
  views.push_back(checkpoint::typed_view("global_step", DType::kI64, {}, &step, sizeof step));
  rep.tensors = views.size();
  rep.bytes = tf_checkpoint::write_bundle(prefix, views);
  return rep;
}

}  // namespace fastnn::tf_export
