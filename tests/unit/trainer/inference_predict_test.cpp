// trainer/inference: top-k softmax, the output lines, and input resolution (what `fastnn predict` reads,
// in which order). The end-to-end checks against `fastnn eval` are tests/integration/predict_*.sh.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/check.h"
#include "core/example.h"
#include "core/safetensors.h"
#include "trainer/inference/embedding_writer.h"
#include "trainer/inference/predict.h"

namespace fastnn::inference {
namespace {
namespace fs = std::filesystem;

TEST(TopKSoftmax, OrderedProbabilitiesSumToOne) {
  const float z[4] = {1.0f, 3.0f, -2.0f, 3.0f};
  const auto all = top_k_softmax(z, 4, 10);  // k clamped to the class count
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].first, 1);  // tie with class 3: the lower id first
  EXPECT_EQ(all[1].first, 3);
  EXPECT_EQ(all[2].first, 0);
  EXPECT_EQ(all[3].first, 2);
  double sum = 0;
  for (const auto& [id, p] : all) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  const double e = std::exp(1.0), t = std::exp(3.0), m = std::exp(-2.0);
  EXPECT_NEAR(all[0].second, t / (2 * t + e + m), 1e-12);
  EXPECT_NEAR(all[2].second, e / (2 * t + e + m), 1e-12);
  const auto top1 = top_k_softmax(z, 4, 1);
  ASSERT_EQ(top1.size(), 1u);
  EXPECT_EQ(top1[0].first, 1);
  EXPECT_DOUBLE_EQ(top1[0].second, all[0].second);
}

TEST(TopKSoftmax, LargeLogitsDoNotOverflow) {
  const float z[3] = {1000.0f, 999.0f, -1000.0f};
  const auto r = top_k_softmax(z, 3, 2);
  EXPECT_NEAR(r[0].second, 1 / (1 + std::exp(-1.0)), 1e-12);
  EXPECT_TRUE(std::isfinite(r[1].second));
}

Prediction sample(int64_t record) {
  Prediction p;
  p.path = record < 0 ? "a,b \"c\".jpg" : "data/test-00000-of-00001.tfrecord";
  p.record = record;
  p.target = record < 0 ? -1 : 2;
  p.topk = {{1, 0.75}, {0, 0.25}};
  return p;
}

TEST(PredictOutput, JsonLines) {
  const std::vector<std::string> names = {"cat", "dog"};
  const nlohmann::json img = nlohmann::json::parse(prediction_json(sample(-1), names));
  EXPECT_EQ(img.dump(), R"({"label":1,"name":"dog","source":"a,b \"c\".jpg","topk":[[1,0.75],[0,0.25]]})");
  const nlohmann::json rec = nlohmann::json::parse(prediction_json(sample(7), {}));
  EXPECT_EQ(rec["record"], 7);
  EXPECT_EQ(rec["target"], 2);
  EXPECT_FALSE(rec.contains("name"));
  // Keys in a fixed order, source first.
  EXPECT_EQ(prediction_json(sample(7), {}).rfind("{\"source\":", 0), 0u);
}

TEST(PredictOutput, CsvQuotesAndEmptyFields) {
  EXPECT_EQ(csv_header(), "source,record,target,label,name,topk");
  EXPECT_EQ(prediction_csv(sample(-1), {"cat", "dog"}), "\"a,b \"\"c\"\".jpg\",,,1,dog,1:0.75 0:0.25");
  EXPECT_EQ(prediction_csv(sample(3), {}), "data/test-00000-of-00001.tfrecord,3,2,1,,1:0.75 0:0.25");
  EXPECT_THROW(parse_predict_format("xml"), ConfigError);
  EXPECT_EQ(parse_predict_format("csv"), PredictFormat::kCsv);
}

class InputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_predict_inputs_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "b" / "c");
    fs::create_directories(dir_ / ".hidden");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const fs::path& p, const std::string& bytes = "x") { std::ofstream(dir_ / p, std::ios::binary) << bytes; }
  fs::path dir_;
};

TEST_F(InputsTest, FoldersAreRecursiveSortedImagesOnly) {
  touch("z.PNG");
  touch("b/c/a.jpeg");
  touch("b/a.jpg");
  touch("notes.txt");
  touch(".hidden/h.jpg");
  touch(".dot.jpg");
  const auto in = resolve_inputs({dir_.string()});
  std::vector<std::string> got;
  for (const auto& i : in) {
    EXPECT_EQ(i.kind, PredictInput::Kind::kImage);
    got.push_back(fs::relative(i.path, dir_).string());
  }
  EXPECT_EQ(got, (std::vector<std::string>{"b/a.jpg", "b/c/a.jpeg", "z.PNG"}));
  EXPECT_EQ(known_total(in), 3u);
}

TEST_F(InputsTest, FilesKeepArgumentOrderAndKind) {
  touch("2.jpg");
  touch("1.tfrecord");
  touch("x.TFRecord.gz");
  const auto in = resolve_inputs({(dir_ / "2.jpg").string(), (dir_ / "1.tfrecord").string(),
                                  (dir_ / "x.TFRecord.gz").string()});
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].kind, PredictInput::Kind::kImage);
  EXPECT_EQ(in[1].kind, PredictInput::Kind::kTFRecord);
  EXPECT_EQ(in[2].kind, PredictInput::Kind::kTFRecord);
  EXPECT_EQ(known_total(in), 0u);  // TFRecord counts unknown without a manifest
}

TEST_F(InputsTest, MissingAndEmptyAreErrors) {
  EXPECT_THROW(resolve_inputs({(dir_ / "nope.jpg").string()}), IoError);
  EXPECT_THROW(resolve_inputs({(dir_ / "b").string()}), ConfigError);  // no image inside
  EXPECT_THROW(resolve_inputs({}), ConfigError);
}

TEST_F(InputsTest, ImageFilesBecomeExamplesAndBadOnesCarryTheirError) {
  touch("good.png", std::string("\x89PNG\r\n\x1a\n", 8) + "rest");
  touch("big.jpg");
  fs::resize_file(dir_ / "big.jpg", kMaxImageFileBytes + 1);
  InputStream s(resolve_inputs({(dir_ / "good.png").string(), (dir_ / "big.jpg").string()}));
  InputItem it;
  ASSERT_TRUE(s.next(&it));
  EXPECT_TRUE(it.error.empty());
  EXPECT_EQ(it.record, -1);
  const ExampleParser parser({keys::kImageFormat, keys::kLabel});
  FeatureView f[2];
  parser.parse(it.bytes, std::span<FeatureView>(f, 2));
  EXPECT_EQ(f[0].single_bytes(keys::kImageFormat), "png");
  EXPECT_EQ(f[1].single_int64(keys::kLabel), 0);
  ASSERT_TRUE(s.next(&it));
  EXPECT_NE(it.error.find("big.jpg"), std::string::npos) << it.error;  // bounded before reading
  EXPECT_FALSE(s.next(&it));
}

TEST_F(InputsTest, Base64TsvLinesCarryLineNumbersAndLabels) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + "rest";
  const std::string b64 = base64_encode(png);
  touch("a.TSV", b64 + "\t3\n\n7\t" + b64 + "\r\n" + "QUJD@\t1\n" + b64 + "\n" + "12\t34\n" + b64 + "\t5");
  const auto in = resolve_inputs({(dir_ / "a.TSV").string()});
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].kind, PredictInput::Kind::kBase64Tsv);
  EXPECT_EQ(known_total(in), 0u);
  InputStream s(in);
  const ExampleParser parser({keys::kImageEncoded, keys::kLabel});
  auto label_of = [&](const InputItem& it) {
    FeatureView f[2];
    parser.parse(it.bytes, std::span<FeatureView>(f, 2));
    EXPECT_EQ(f[0].single_bytes(keys::kImageEncoded), png);
    return f[1].single_int64(keys::kLabel);
  };
  InputItem it;
  ASSERT_TRUE(s.next(&it));
  EXPECT_EQ(it.line, 1);
  EXPECT_EQ(it.record, -1);
  EXPECT_TRUE(it.error.empty()) << it.error;
  EXPECT_EQ(label_of(it), 3);
  ASSERT_TRUE(s.next(&it));  // line 2 is blank: passed over, still counted
  EXPECT_EQ(it.line, 3);
  EXPECT_EQ(label_of(it), 7);  // label first, "\r\n"
  ASSERT_TRUE(s.next(&it));
  EXPECT_EQ(it.line, 4);
  EXPECT_NE(it.error.find("base64"), std::string::npos) << it.error;
  ASSERT_TRUE(s.next(&it));
  EXPECT_EQ(it.line, 5);
  EXPECT_NE(it.error.find("two tab-separated fields"), std::string::npos) << it.error;
  ASSERT_TRUE(s.next(&it));
  EXPECT_EQ(it.line, 6);
  EXPECT_FALSE(it.error.empty());  // two numbers: "12" is taken as the image, and is not base64
  ASSERT_TRUE(s.next(&it));  // the last line has no newline
  EXPECT_EQ(it.line, 7);
  EXPECT_EQ(label_of(it), 5);
  EXPECT_FALSE(s.next(&it));
}

TEST_F(InputsTest, NpyWriterHeaderAndRows) {
  const std::string path = (dir_ / "e.npy").string();
  {
    EmbeddingWriter w(path, 3);
    w.add_row(std::vector<float>{1.f, 2.f, 3.f});
    w.add_row(std::vector<float>{-1.f, 0.5f, 1e30f});
    EXPECT_THROW(w.add_row(std::vector<float>{1.f}), Error);
    EXPECT_FALSE(fs::exists(path));  // not before commit
    w.commit();
  }
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), kEmbeddingHeaderBytes + 6 * sizeof(float));
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]), kEmbeddingHeaderBytes - 10);
  EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_EQ(bytes[kEmbeddingHeaderBytes - 1], '\n');
  float v[6];
  std::memcpy(v, bytes.data() + kEmbeddingHeaderBytes, sizeof v);
  EXPECT_EQ(v[2], 3.f);
  EXPECT_EQ(v[5], 1e30f);
  {
    EmbeddingWriter w((dir_ / "gone.npy").string(), 2);
    w.add_row(std::vector<float>{1.f, 2.f});
  }  // never committed: nothing left behind
  EXPECT_FALSE(fs::exists(dir_ / "gone.npy"));
  EXPECT_FALSE(fs::exists(dir_ / "gone.npy.fastnn-tmp"));
}

// The .safetensors form, read back by the checkpoint reader (which validates every field, offsets
// covering the buffer exactly included), at a row count that changes the header's digits.
TEST_F(InputsTest, SafetensorsEmbeddingsReadBackByTheCheckpointReader) {
  const std::string path = (dir_ / "e.safetensors").string();
  std::vector<float> expected;
  {
    EmbeddingWriter w(path, 3);
    for (int r = 0; r < 1234; ++r) {
      const std::vector<float> row{static_cast<float>(r), -0.5f * static_cast<float>(r), 1e-30f};
      w.add_row(row);
      expected.insert(expected.end(), row.begin(), row.end());
    }
    w.commit();
  }
  const checkpoint::SafetensorsFile f = checkpoint::SafetensorsFile::open(path);
  ASSERT_EQ(f.arrays().size(), 1u);
  const checkpoint::ArrayView& a = f.at("embeddings");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1234, 3}));
  ASSERT_EQ(a.bytes.size(), expected.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(a.bytes.data(), expected.data(), a.bytes.size()), 0);
  EXPECT_EQ(f.metadata().at("format"), "fastnn-embeddings");
  EXPECT_EQ(f.size_bytes(), kEmbeddingHeaderBytes + expected.size() * sizeof(float));
  EXPECT_THROW(embedding_format("e.bin"), ConfigError);
  EXPECT_EQ(embedding_format("x.safetensors"), EmbeddingFormat::kSafetensors);
}

}  // namespace
}  // namespace fastnn::inference
