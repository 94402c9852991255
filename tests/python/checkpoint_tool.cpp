// Helper for tests/python/test_checkpoint_conformance.py (an independent safetensors reader/writer
// in Python, stdlib only).
//
//   checkpoint_tool write DIR     saves checkpoints 5 and 10 of the fixed arrays below with
//                                 CheckpointManager (the values are the same formulas as the
//                                 Python test's expected_weights() / expected_optimizer())
//   checkpoint_tool dump FILE     validates one safetensors file and prints it as one JSON object:
//                                 {"metadata": {...}, "tensors": {name: {"dtype", "shape",
//                                  "values": [F32: uint32 bits, F16/BF16: uint16 bits, ints: values]}}}
//   checkpoint_tool load PATH     load_checkpoint(PATH) (prefix, file or directory), prints
//                                 {"prefix", "step", "epoch", "weights": dump, "optimizer": dump}
//
// Exit status: 0 ok, 1 a fastnn::Error (message on stderr), 2 usage.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/checkpoint/checkpoint_manager.h"

namespace {

using namespace fastnn;
using namespace fastnn::checkpoint;

template <typename T>
Array make(std::string name, DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  Array a{std::move(name), dtype, std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

std::vector<Array> weights(int64_t step) {
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[i] = static_cast<float>(i) * 0.5f - 2.75f + static_cast<float>(step);
  return {
      make("layer1/weights", DType::kF32, {3, 4}, w),
      make("layer1/bias", DType::kF16, {4}, std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff, 0x0001}),
      make("bn/scale", DType::kBF16, {2, 2}, std::vector<uint16_t>{0x3f80, 0xc0a0, 0x7f80, 0x0000}),
      make("counts", DType::kI32, {5}, std::vector<int32_t>{INT32_MIN, -1, 0, 1, INT32_MAX}),
      make("ids", DType::kI64, {2, 1}, std::vector<int64_t>{INT64_MIN, int64_t{1} << 40}),
      make("mask", DType::kU8, {6}, std::vector<uint8_t>{0, 1, 127, 128, 254, 255}),
      make("scalar", DType::kF32, {}, std::vector<float>{3.5f}),
      make("empty", DType::kF32, {0, 3}, std::vector<float>{}),
  };
}

std::vector<Array> optimizer_state() {
  std::vector<float> m(12);
  for (int i = 0; i < 12; ++i) m[i] = static_cast<float>(i) * 0.125f;
  return {make("layer1/weights/adam_m", DType::kF32, {12}, m),
          make("adam/beta1_power", DType::kF32, {1}, std::vector<float>{0.81f})};
}

template <typename T>
nlohmann::json values_as(const ArrayView& a) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < a.bytes.size() / sizeof(T); ++i) {
    T v;
    std::memcpy(&v, a.bytes.data() + i * sizeof(T), sizeof(T));
    out.push_back(v);
  }
  return out;
}

nlohmann::json dump(const SafetensorsFile& f) {
  nlohmann::json tensors = nlohmann::json::object();
  for (const ArrayView& a : f.arrays()) {
    nlohmann::json values;
    switch (a.dtype) {
      case DType::kF32: values = values_as<uint32_t>(a); break;
      case DType::kF16:
      case DType::kBF16: values = values_as<uint16_t>(a); break;
      case DType::kI32: values = values_as<int32_t>(a); break;
      case DType::kI64: values = values_as<int64_t>(a); break;
      case DType::kU8: values = values_as<uint8_t>(a); break;
      case DType::kF64: break;  // no safetensors array holds f64
    }
    tensors[a.name] = {{"dtype", safetensors_dtype_name(a.dtype)}, {"shape", a.shape}, {"values", values}};
  }
  return {{"metadata", f.metadata()}, {"tensors", tensors}};
}

int run(int argc, char** argv) {
  const std::string cmd = argc >= 3 ? argv[1] : "";
  if (cmd == "write") {
    CheckpointManager::Options o;
    o.keep_max = 5;
    o.fastnn_version = "fastnn conformance";
    CheckpointManager m(argv[2], o);
    for (int64_t step : {5, 10}) {
      CheckpointMeta meta;
      meta.set_epoch(step / 5);
      meta.set_samples_seen(step * 32);
      meta.set_model_name("conformance");
      meta.mutable_config()->set_batch_size(32);
      const auto w = weights(step);
      const auto o2 = optimizer_state();
      m.save(step, views_of(w), views_of(o2), meta);
    }
    return 0;
  }
  if (cmd == "dump") {
    std::cout << dump(SafetensorsFile::open(argv[2])).dump() << "\n";
    return 0;
  }
  if (cmd == "load") {
    const LoadedCheckpoint ck = load_checkpoint(argv[2]);
    std::cout << nlohmann::json{{"prefix", ck.prefix},
                                {"step", ck.meta.step()},
                                {"epoch", ck.meta.epoch()},
                                {"weights", dump(ck.weights)},
                                {"optimizer", dump(*ck.optimizer)}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cerr << "usage: checkpoint_tool write DIR | dump FILE | load PATH\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const fastnn::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
