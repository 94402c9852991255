// `fastnn export --checkpoint RUN_OR_CKPT --format onnx --output model.onnx [--dtype float32|float16]`:
// a trained model as an ONNX file (opset 17, dynamic batch, preprocessing in its metadata; external
// weight data beyond 2 GiB). `--model_name NAME` instead of --checkpoint exports a zoo model freshly
// initialised. The exporter is trainer/export/export_model.h; docs/INFERENCE.md describes the file.
// `--format tf-checkpoint --output PREFIX` writes a TensorFlow V2 checkpoint of the TF-slim network
// instead (trainer/export/export_tf_checkpoint.h; docs/CHECKPOINTS.md).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "core/check.h"
#include "core/output_file.h"
#include "trainer/export/export_model.h"
#include "trainer/export/export_tf_checkpoint.h"

namespace fastnn::cli {
namespace {

struct ExportArgs {
  std::string checkpoint, model_name, output, format = "onnx", dtype = "float32", external = "auto", test_data;
  int num_classes = 0, image_size = 0, test_samples = 8;
  uint64_t seed = 0;
  bool quiet = false, json = false, overwrite = false;
};



}  // namespace

void add_export_command(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Export a trained model as ONNX (opset 17) for onnxruntime, TensorRT..., or as a TensorFlow checkpoint");
  auto* ckpt = cmd->add_option("--checkpoint", a->checkpoint, "Checkpoint prefix or file, or a run directory (its latest)");
  auto* zoo = cmd->add_option("--model_name,--model-name", a->model_name,
                              "Instead of a checkpoint: a zoo model, freshly initialised (untrained)");
  ckpt->excludes(zoo);
  cmd->add_option("--output,-o", a->output,
                  "The ONNX file to write (its weights go to <output>.data when external); with tf-checkpoint the "
                  "checkpoint prefix P (P.index, P.data-00000-of-00001)")
      ->required();
  cmd->add_option("--format", a->format, "onnx, or tf-checkpoint (TensorFlow V2, TF-slim's variable names and layouts)")
      ->check(CLI::IsMember({"onnx", "tf-checkpoint"}));
  cmd->add_option("--dtype", a->dtype, "Weights and compute: float32 or float16 (inputs and logits stay float32)")
      ->check(CLI::IsMember({"float32", "float16"}));
  cmd->add_option("--external_data,--external-data", a->external,
                  "Weights as ONNX external data: auto (beyond protobuf's 2 GiB), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->add_option("--num_classes,--num-classes", a->num_classes, "With --model_name: classes (default: the model's)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--image_size,--image-size", a->image_size, "With --model_name: input height = width (default: the model's)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--seed", a->seed, "With --model_name: initialisation seed");
  cmd->add_option("--test_data,--test-data", a->test_data,
                  "Also write reference inputs and fastnn's logits here (ONNX test_data_set_0 layout)");
  cmd->add_option("--test_samples,--test-samples", a->test_samples, "Samples in the test data")->check(CLI::Range(1, 4096));
  cmd->add_flag("--overwrite", a->overwrite, "Replace an existing --output (and its companion files)");
  cmd->add_flag("--quiet,-q", a->quiet, "No summary on stderr");
  cmd->add_flag("--json", a->json, "Print the summary as one JSON object on stdout (files written, bytes, model)");
  cmd->callback([a] {
    if (a->checkpoint.empty() && a->model_name.empty()) throw CLI::RequiredError("--checkpoint (or --model_name)");
    const onnx_export::SourceOptions source{.checkpoint = a->checkpoint, .model_name = a->model_name,
                                            .num_classes = a->num_classes, .image_size = a->image_size, .seed = a->seed};
    if (a->format == "tf-checkpoint") {
      if (a->dtype != "float32" || !a->test_data.empty() || a->external != "auto")
        throw CLI::ValidationError("--format tf-checkpoint", "--dtype, --test_data and --external_data are ONNX options");
      // The index names the checkpoint; its data shard goes with it.
      refuse_existing_output(a->output + ".index", a->overwrite);
      const tf_export::TfExportReport rep = tf_export::export_tf_checkpoint(source, a->output);
      if (a->json)
        return print_json_line(nlohmann::ordered_json{
            {"format", "tf-checkpoint"}, {"source", rep.source}, {"model_name", rep.model_name},
            {"num_classes", rep.num_classes}, {"image_size", rep.image_size}, {"step", rep.step},
            {"prefix", rep.prefix}, {"tensors", rep.tensors}, {"bytes", rep.bytes}});
      if (!a->quiet)
        std::fprintf(stderr, "export: %s: %s, %d classes, %dx%d, step %lld -> TensorFlow V2 checkpoint %s (%zu tensors, "
                     "%llu bytes)\n", rep.source.c_str(), rep.model_name.c_str(), rep.num_classes, rep.image_size,
                     rep.image_size, static_cast<long long>(rep.step), rep.prefix.c_str(), rep.tensors,
                     static_cast<unsigned long long>(rep.bytes));
      return;
    }
    onnx_export::ExportRequest r;
    r.source = source;
    r.output = a->output;
    r.float16 = a->dtype == "float16";
    r.external = a->external == "always" ? onnx_export::External::kAlways
                 : a->external == "never" ? onnx_export::External::kNever
                                          : onnx_export::External::kAuto;
    r.test_data_dir = a->test_data;
    r.test_samples = a->test_samples;
    r.producer_version = FASTNN_VERSION;
    r.overwrite = a->overwrite;
    const onnx_export::ExportReport rep = onnx_export::export_model(r);
    const inference::ModelInfo& m = rep.model;
    if (a->json) {
      nlohmann::ordered_json ops = nlohmann::ordered_json::object();
      for (const auto& [op, n] : rep.op_types) ops[op] = n;
      return print_json_line(nlohmann::ordered_json{
          {"format", "onnx"}, {"source", m.checkpoint.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(m.checkpoint)},
          {"model_name", m.model_name}, {"num_classes", m.num_classes}, {"height", m.height}, {"width", m.width},
          {"channels", m.channels}, {"preset", m.preset}, {"dtype", a->dtype}, {"nodes", rep.nodes},
          {"initializers", rep.initializers}, {"parameters", rep.parameters}, {"op_types", ops},
          {"model_path", rep.files.model_path}, {"model_bytes", rep.files.model_bytes},
          {"data_path", rep.files.data_path.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rep.files.data_path)},
          {"data_bytes", rep.files.data_bytes}, {"external_tensors", rep.files.external_tensors}});
    }
    if (a->quiet) return;
    std::string ops;
    for (const auto& [op, n] : rep.op_types) ops += str(ops.empty() ? "" : " ", op, ":", n);
    std::fprintf(stderr, "export: %s: %s, %d classes, %dx%dx%d NCHW, %s preprocessing, %s\n",
                 m.checkpoint.empty() ? "zoo (initialised)" : m.checkpoint.c_str(), m.model_name.c_str(), m.num_classes,
                 m.height, m.width, m.channels, m.preset.c_str(), a->dtype.c_str());
    std::fprintf(stderr, "export: %lld nodes (%s), %lld initializers, %lld parameters\n",
                 static_cast<long long>(rep.nodes), ops.c_str(), static_cast<long long>(rep.initializers),
                 static_cast<long long>(rep.parameters));
    std::fprintf(stderr, "export: wrote %s (%llu bytes)", rep.files.model_path.c_str(),
                 static_cast<unsigned long long>(rep.files.model_bytes));
    if (!rep.files.data_path.empty())
      std::fprintf(stderr, " + external data %s (%d tensors, %llu bytes)", rep.files.data_path.c_str(),
                   rep.files.external_tensors, static_cast<unsigned long long>(rep.files.data_bytes));
    std::fprintf(stderr, "\n");
  });
}

}  // namespace fastnn::cli
