#include "trainer/export/export_model.h"

#include "core/check.h"
#include "core/output_file.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/export/onnx_model.h"
#include "trainer/export/test_data.h"

namespace fastnn::onnx_export {

ExportReport export_model(const ExportRequest& r) {
  if (r.output.empty()) throw ConfigError("export: no output file");
  const ModelSource source(r.source);
  ExportReport report;
  report.model = source.info();
  // The checkpoint this reads must survive it; a FIFO or device as the output is refused before any work.
  const std::vector<std::string> inputs =
      report.model.checkpoint.empty() ? std::vector<std::string>{} : checkpoint::checkpoint_file_paths(report.model.checkpoint);
  refuse_existing_output(r.output, r.overwrite, inputs);
  const graph::NetPlan plan = graph::NetPlan::make(source.net(), {.batch_size = 1});
  ModelOptions o;
  o.float16 = r.float16;
  o.producer_version = r.producer_version;
  o.doc = str("fastnn ", report.model.model_name, ", ", report.model.num_classes, " classes, input ",
              report.model.height, "x", report.model.width, "x", report.model.channels, " NCHW (",
              report.model.preset, " preprocessing); output logits");
  o.metadata = source.metadata(r.float16);
  if (const inference::HeadLogits* h = source.head())
    o.head = ExportedHead{.rows = h->effective_rows(), .classes = h->classes(), .emb_dim = h->emb_dim(),
                          .normalized = h->spec().normalized, .scale = static_cast<float>(h->spec().scale)};
  onnx::ModelProto model = build_onnx_model(
      plan, [&source](const graph::PlannedTensor& t) { return source.value(t.name, t.spec.shape); }, o);
  const onnx::GraphProto& g = model.graph();
  report.nodes = g.node_size();
  report.initializers = g.initializer_size();
  for (const onnx::NodeProto& n : g.node()) ++report.op_types[n.op_type()];
  for (const onnx::TensorProto& t : g.initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    report.parameters += n;
  }
  report.files = write_onnx_file(model, r.output, r.external, kInlineLimit, inputs);
  if (!r.test_data_dir.empty()) write_test_data(source, r.test_data_dir, r.test_samples, r.test_seed);
  return report;
}

}  // namespace fastnn::onnx_export
