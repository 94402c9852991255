#include "trainer/export/test_data.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "onnx/onnx.pb.h"
#include "trainer/ops/random.h"

namespace fastnn::onnx_export {
namespace {

void write_tensor(const std::string& path, const std::string& name, const Tensor& t) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(t.data<float>(), t.nbytes());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !p.SerializeToOstream(&out)) throw IoError(str(path, ": cannot write: ", std::strerror(errno)));
  out.close();
  if (!out) throw IoError(str(path, ": write failed: ", std::strerror(errno)));
}

}  // namespace

void write_test_data(const ModelSource& source, const std::string& dir, int64_t samples, uint64_t seed) {
  if (samples < 1 || samples > 4096) throw ConfigError(str("export: test samples must be in [1, 4096], got ", samples));
  const inference::ModelInfo& m = source.info();
  graph::Graph g = source.make_graph(samples);
  Tensor images = Tensor::empty(g.input_shape(), DType::kF32, Device::kCpu, Layout::kNCHW);
  float* x = images.data<float>();
  const int64_t plane = int64_t{m.height} * m.width;
  for (int64_t i = 0; i < images.numel(); ++i) {
    const auto c = static_cast<int>((i / plane) % m.channels);
    const auto pixel = static_cast<float>(ops::philox_word(seed, 0, static_cast<uint64_t>(i)) % 256);
    x[i] = (pixel - source.mean(c)) * source.scale(c);
  }
  g.forward(images, /*training=*/false);
  const std::filesystem::path set = std::filesystem::path(dir) / "test_data_set_0";
  std::error_code ec;
  std::filesystem::create_directories(set, ec);
  if (ec) throw IoError(str(set.string(), ": cannot create: ", ec.message()));
  write_tensor((set / "input_0.pb").string(), "images", images);
  const inference::HeadLogits* head = source.head();
  if (!head) return write_tensor((set / "output_0.pb").string(), "logits", g.output(0));
  // An embedding model: the logits are its head's (as predict computes them), then the embedding.
  const Tensor& embedding = g.output(0);
  Tensor logits = Tensor::empty({samples, head->classes()}, DType::kF32);
  head->compute(embedding.data<float>(), samples, logits.data<float>());
  write_tensor((set / "output_0.pb").string(), "logits", logits);
  write_tensor((set / "output_1.pb").string(), "embedding", embedding);
}

}  // namespace fastnn::onnx_export
