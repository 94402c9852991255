// TensorFlow checkpoints written by TensorFlow itself (tests/data/tf_checkpoints/make_fixtures.py, which
// lists the variables and the formulas of their values): V1, V2, both sharded over two files, a
// partitioned variable; every way of naming them; damaged copies refused with the file, tensor, byte.
#include "core/tf_checkpoint/tf_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "core/tf_checkpoint/bundle_reader.h"
#include "core/tf_checkpoint/bundle_writer.h"
#include "core/tf_checkpoint/tf_dtype.h"

namespace fastnn::tf_checkpoint {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kDir = FASTNN_SOURCE_DIR "/tests/data/tf_checkpoints";

template <typename T>
std::vector<T> values(const checkpoint::Array& a) {
  std::vector<T> v(a.bytes.size() / sizeof(T));
  std::memcpy(v.data(), a.bytes.data(), a.bytes.size());
  return v;
}

// The fixtures' values, from make_fixtures.py's formulas.
void expect_fixture_values(const TfTensorSource& s, bool has_bf16) {
  std::vector<std::string> names;
  for (const TfTensorInfo& t : s.tensors()) names.push_back(t.name);
  std::vector<std::string> want = {"LeNet/conv1/weights", "LeNet/conv1/weights/ExponentialMovingAverage",
                                   "LeNet/conv1/weights/Momentum", "global_step"};
  if (has_bf16) want.push_back("misc/bf16");
  want.insert(want.end(), {"misc/counts", "misc/half", "misc/label", "part/weights"});
  ASSERT_EQ(names, want);

  const checkpoint::Array w = s.read("LeNet/conv1/weights");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{5, 5, 1, 4}));
  const std::vector<float> wv = values<float>(w), mv = values<float>(s.read("LeNet/conv1/weights/Momentum"));
  const std::vector<float> ev = values<float>(s.read("LeNet/conv1/weights/ExponentialMovingAverage"));
  ASSERT_EQ(wv.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(wv[i], (i - 50) / 8.0f);
    EXPECT_EQ(mv[i], i / 4.0f);
    EXPECT_EQ(ev[i], (i - 50) / 16.0f);
  }
  const TfTensorInfo* part = s.find("part/weights");
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->slices.size(), 3u);  // fixed_size_partitioner(3): rows 0-3, 4-6, 7-9
  const checkpoint::Array p = s.read("part/weights");
  EXPECT_EQ(p.shape, (std::vector<int64_t>{10, 3}));
  const std::vector<float> pv = values<float>(p);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(pv[i], i * 1.5f);

  const checkpoint::Array h = s.read("misc/half");
  EXPECT_EQ(h.dtype, DType::kF16);
  EXPECT_EQ(checkpoint::to_f32(h.view()), (std::vector<float>{0.5f, -1, 2, 3.25f, 65504, -0.125f}));
  const checkpoint::Array c = s.read("misc/counts");
  EXPECT_EQ(c.dtype, DType::kI32);
  EXPECT_EQ(values<int32_t>(c), (std::vector<int32_t>{-2, 0, 7, 2147483647}));
  const checkpoint::Array g = s.read("global_step");
  EXPECT_EQ(g.dtype, DType::kI64);
  EXPECT_TRUE(g.shape.empty());
  EXPECT_EQ(values<int64_t>(g), (std::vector<int64_t>{(int64_t{1} << 40) + 5}));
  if (has_bf16) {
    EXPECT_EQ(checkpoint::to_f32(s.read("misc/bf16").view()), (std::vector<float>{1.5f, -2, 0.0078125f}));
  }

  EXPECT_EQ(tf_dtype_name(s.find("misc/label")->dtype), "string");
  try {
    s.read("misc/label");
    ADD_FAILURE() << "a string tensor was read as an array";
  } catch (const FormatError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'misc/label' is string, not a numeric array"));
  }
}

TfCheckpoint open_path(const std::string& path) {
  const auto found = find_tf_checkpoint(path);
  if (!found) throw Error(str(path, ": not recognised"));
  return open_tf_checkpoint(*found);
}

TEST(TfCheckpoint, ReadsV2WrittenByTensorFlow) {
  const TfCheckpoint c = open_path(kDir + "/v2/model.ckpt");
  EXPECT_EQ(c.path.format, TfFormat::kV2);
  EXPECT_EQ(c.path.files.size(), 2u);
  EXPECT_THAT(c.describe(), HasSubstr("TensorFlow V2 checkpoint"));
  expect_fixture_values(*c.tensors, true);
}

TEST(TfCheckpoint, ReadsV2WithTwoDataFiles) {
  const TfCheckpoint c = open_path(kDir + "/v2_sharded/model.ckpt");
  EXPECT_EQ(c.path.files.size(), 3u);
  expect_fixture_values(*c.tensors, true);
}

TEST(TfCheckpoint, ReadsV1WrittenByTensorFlow) {
  const TfCheckpoint c = open_path(kDir + "/v1/model.ckpt");
  EXPECT_EQ(c.path.format, TfFormat::kV1);
  expect_fixture_values(*c.tensors, false);
}

TEST(TfCheckpoint, ReadsV1SplitOverTwoFiles) {
  const TfCheckpoint c = open_path(kDir + "/v1_sharded/model.ckpt");
  EXPECT_EQ(c.path.format, TfFormat::kV1);
  EXPECT_EQ(c.path.files.size(), 2u);
  expect_fixture_values(*c.tensors, false);
}

TEST(TfCheckpoint, FindsEveryWayOfNamingOne) {
  const std::vector<std::pair<std::string, std::string>> ways = {
      {"v2", "v2/model.ckpt"},  // a folder with TensorFlow's `checkpoint` file
      {"v2/model.ckpt.index", "v2/model.ckpt"},
      {"v2/model.ckpt.data-00000-of-00001", "v2/model.ckpt"},
      {"v2_sharded/model.ckpt.data-00001-of-00002", "v2_sharded/model.ckpt"},
      {"v1", "v1/model.ckpt"},
      {"v1_sharded", "v1_sharded/model.ckpt"},  // its `checkpoint` names model.ckpt-?????-of-00002
      {"v1_sharded/model.ckpt-00001-of-00002", "v1_sharded/model.ckpt"},
      {"v1_sharded/model.ckpt-\?\?\?\?\?-of-00002", "v1_sharded/model.ckpt"},
  };
  for (const auto& [given, prefix] : ways) {
    const auto found = find_tf_checkpoint(kDir + "/" + given);
    ASSERT_TRUE(found.has_value()) << given;
    EXPECT_EQ(fs::path(found->prefix).lexically_normal(), fs::path(kDir + "/" + prefix).lexically_normal()) << given;
  }
  // Not TensorFlow's: nothing there, fastnn's own files, a folder without a `checkpoint` file.
  EXPECT_FALSE(find_tf_checkpoint(kDir + "/v2/nothing"));
  EXPECT_FALSE(find_tf_checkpoint(kDir + "/make_fixtures.py"));
  EXPECT_FALSE(find_tf_checkpoint(kDir));
}

TEST(TfCheckpoint, FastnnsWriterIsReadBackBitwise) {
  std::vector<float> w(3 * 3 * 2 * 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.37f - 5;
  const int64_t step = 1234;
  const uint16_t half[2] = {0x3c00, 0xc000};  // 1, -2
  const std::vector<checkpoint::ArrayView> arrays = {
      checkpoint::f32_view("InceptionV3/Conv2d_1a_3x3/weights", {3, 3, 2, 4}, w.data(), w.size()),
      checkpoint::typed_view("global_step", DType::kI64, {}, &step, sizeof step),
      checkpoint::typed_view("b/half", DType::kF16, {2}, half, sizeof half)};
  const auto [index, data] = encode_bundle(arrays);
  const auto r = BundleReader::parse(index, {data}, "out/model.ckpt");
  ASSERT_EQ(r->tensors().size(), 3u);
  EXPECT_EQ(r->tensors()[0].name, "InceptionV3/Conv2d_1a_3x3/weights");  // name order
  for (const checkpoint::ArrayView& a : arrays) {
    const checkpoint::Array back = r->read(a.name);
    EXPECT_EQ(back.dtype, a.dtype);
    EXPECT_EQ(back.shape, a.shape);
    ASSERT_EQ(back.bytes.size(), a.bytes.size());
    EXPECT_EQ(std::memcmp(back.bytes.data(), a.bytes.data(), a.bytes.size()), 0) << a.name;
  }
  EXPECT_EQ(r->find("global_step")->dtype, 9);  // DT_INT64

  const fs::path dir = fs::path(::testing::TempDir()) / ("tf_written_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_bundle((dir / "sub/model.ckpt").string(), arrays);
  const TfCheckpoint c = open_path((dir / "sub/model.ckpt").string());
  EXPECT_EQ(values<float>(c.tensors->read("InceptionV3/Conv2d_1a_3x3/weights")), w);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir / "sub")) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"model.ckpt.data-00000-of-00001", "model.ckpt.index"}));  // no temporaries
  fs::remove_all(dir);
}

class DamagedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("tf_damaged_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(kDir + "/v2", dir_ / "v2");
    fs::copy(kDir + "/v1", dir_ / "v1");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void rewrite(const fs::path& p, const std::function<void(std::string&)>& edit) {
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    in.close();
    edit(bytes);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

TEST_F(DamagedCheckpoint, AFlippedBitInAV2DataFileNamesTheFileTheTensorAndTheByte) {
  const fs::path data = dir_ / "v2/model.ckpt.data-00000-of-00001";
  rewrite(data, [](std::string& b) { b[700] ^= 0x04; });
  const TfCheckpoint c = open_path((dir_ / "v2/model.ckpt").string());  // the index is intact
  int refused = 0;
  for (const TfTensorInfo& t : c.tensors->tensors()) {
    if (t.name == "misc/label") continue;
    const std::string e = error_of([&] { c.tensors->read(t.name); });
    if (e == "(no error)") continue;
    ++refused;
    EXPECT_THAT(e, HasSubstr(data.string() + ": tensor '" + t.name + "'"));
    EXPECT_THAT(e, HasSubstr("at byte "));
    EXPECT_THAT(e, HasSubstr("CRC-32C"));
  }
  EXPECT_EQ(refused, 1);
}

TEST_F(DamagedCheckpoint, TruncatedFilesAreRefusedNamed) {
  const fs::path data = dir_ / "v2/model.ckpt.data-00000-of-00001";
  rewrite(data, [](std::string& b) { b.resize(b.size() - 10); });
  EXPECT_THAT(error_of([&] { open_path((dir_ / "v2/model.ckpt").string()); }),
              HasSubstr(data.string() + ": tensor '"));
  EXPECT_THAT(error_of([&] { open_path((dir_ / "v2/model.ckpt").string()); }), HasSubstr("runs past the end of the file"));
  const fs::path v1 = dir_ / "v1/model.ckpt";
  rewrite(v1, [](std::string& b) { b.resize(b.size() / 2); });
  // Without its footer a V1 file is no longer recognised as a table; opened as one, it is refused.
  EXPECT_FALSE(find_tf_checkpoint(v1.string()));
  EXPECT_THAT(error_of([&] { open_tf_checkpoint({TfFormat::kV1, v1.string(), {v1.string()}}); }),
              HasSubstr(v1.string() + ": not a TensorFlow table"));
}

TEST_F(DamagedCheckpoint, AFlippedBitInAV1FileOrAnIndexNamesTheFileAndTheBlock) {
  const fs::path v1 = dir_ / "v1/model.ckpt";
  rewrite(v1, [](std::string& b) { b[900] ^= 0x01; });
  const std::string e = error_of([&] { open_path(v1.string()); });
  EXPECT_THAT(e, HasSubstr(v1.string() + ": block at byte 0"));
  EXPECT_THAT(e, HasSubstr("CRC-32C"));
  const fs::path index = dir_ / "v2/model.ckpt.index";
  rewrite(index, [](std::string& b) { b[40] ^= 0x80; });
  EXPECT_THAT(error_of([&] { open_path((dir_ / "v2/model.ckpt").string()); }), HasSubstr(index.string() + ": block at byte"));
}

TEST_F(DamagedCheckpoint, AMissingDataFileIsAnIoErrorNamingIt) {
  fs::remove(dir_ / "v2/model.ckpt.data-00000-of-00001");
  EXPECT_THAT(error_of([&] { open_path((dir_ / "v2/model.ckpt").string()); }),
              HasSubstr("model.ckpt.data-00000-of-00001"));
}

}  // namespace
}  // namespace fastnn::tf_checkpoint
