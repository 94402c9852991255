// Helper for tests/python/test_tf_checkpoint_crosscheck.py: a zoo model's eval-mode logits from any
// start checkpoint, read the way `fastnn train --checkpoint_path` reads it (loop::finetune_variables:
// TensorFlow V1/V2 or fastnn's own), on images the caller preprocessed.
//
//   checkpoint_logits MODEL NUM_CLASSES SIZE CHECKPOINT IMAGES.f32 N LOGITS.f32 [ema]
//     IMAGES.f32  N x SIZE x SIZE x 3 float32, NHWC (what TensorFlow's preprocessing gives)
//     LOGITS.f32  written: N x NUM_CLASSES float32
//     ema         restore the moving averages (checkpoint_use_moving_averages)
// Exit status: 0 ok, 1 a fastnn::Error (message on stderr), 2 usage.
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/graph/graph.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/zoo/zoo.h"

int main(int argc, char** argv) {
  using namespace fastnn;
  if (argc != 8 && !(argc == 9 && std::string(argv[8]) == "ema")) {
    std::cerr << "usage: checkpoint_logits MODEL NUM_CLASSES SIZE CHECKPOINT IMAGES.f32 N LOGITS.f32 [ema]\n";
    return 2;
  }
  try {
    const std::string model = argv[1], checkpoint = argv[4];
    const int classes = std::stoi(argv[2]), size = std::stoi(argv[3]), n = std::stoi(argv[6]);
    const NetDef net = zoo::build_net(model, {.num_classes = classes, .height = size, .width = size});
    graph::Graph g(net, {.batch_size = n, .inference = true});
    const std::vector<NamedArray> values =
        loop::finetune_variables(g.variables(), net, checkpoint, {.use_moving_averages = argc == 9});
    for (const graph::NamedTensor& v : g.variables())
      for (const NamedArray& a : values)
        if (a.name == v.name) {
          FASTNN_CHECK(static_cast<int64_t>(a.data.size()) == v.value.numel(), a.name);
          Tensor t = v.value;
          std::copy(a.data.begin(), a.data.end(), t.data<float>());
        }
    const size_t pixels = static_cast<size_t>(size) * static_cast<size_t>(size);
    std::vector<float> nhwc(static_cast<size_t>(n) * pixels * 3), nchw(nhwc.size());
    std::ifstream in(argv[5], std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(nhwc.data()), static_cast<std::streamsize>(nhwc.size() * sizeof(float))))
      throw IoError(str(argv[5], ": cannot read ", nhwc.size(), " floats"));
    for (size_t b = 0; b < static_cast<size_t>(n); ++b)
      for (size_t p = 0; p < pixels; ++p)
        for (size_t c = 0; c < 3; ++c) nchw[(b * 3 + c) * pixels + p] = nhwc[(b * pixels + p) * 3 + c];
    g.forward(Tensor::from<float>(Shape{n, 3, size, size}, std::span<const float>(nchw)), /*training=*/false);
    const Tensor& logits = g.output(0);
    std::ofstream out(argv[7], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(logits.data<float>()), static_cast<std::streamsize>(logits.numel() * sizeof(float)));
    if (!out) throw IoError(str(argv[7], ": cannot write"));
  } catch (const std::exception& e) {
    std::cerr << "checkpoint_logits: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
