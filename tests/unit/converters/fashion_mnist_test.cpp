// The real Fashion-MNIST (Debian package dataset-fashion-mnist): convert all 70,000 images, decode
// every record and find its source image; the records plus the manifest's dropped samples are exactly
// the source (as a multiset of (pixels, label): the dataset has a few identical images); then
// `check` passes. Skipped when the dataset is not installed.
#include <gtest/gtest.h>
#include <oneapi/tbb/parallel_for.h>

#include <unordered_map>

#include "convert_test_util.h"
#include "converters/idx.h"
#include "converters/mnist.h"
#include "converters/shard_check.h"

namespace fastnn::converters {
namespace {

using namespace testing;

constexpr const char* kDir = "/usr/share/datasets/fashion-mnist";

TEST(FashionMnist, EveryImageOnceOrAccountedFor) {
  if (MnistSource::find_idx_file(kDir, "train-images", "idx3-ubyte").empty()) GTEST_SKIP() << kDir << " not installed";
  TempDir t;
  MnistOptions mo;
  mo.dir = kDir;
  MnistSource src(mo);
  ConvertOptions o = options_for(t / "out", 1, 7, 2024);  // 7 shards: 3 train images dropped
  o.threads = 0;
  ConvertResult r = run_conversion(src, o);
  const Manifest& m = r.manifest;
  ASSERT_EQ(m.find_split("train")->num_source_samples, 60000u);
  ASSERT_EQ(m.find_split("test")->num_records, 10000u);

  for (const char* split : {"train", "test"}) {
    SCOPED_TRACE(split);
    const std::string stem = std::string(split) == "train" ? "train" : "t10k";
    IdxArray images = read_idx(MnistSource::find_idx_file(kDir, stem + "-images", "idx3-ubyte"), 3);
    IdxArray labels = read_idx(MnistSource::find_idx_file(kDir, stem + "-labels", "idx1-ubyte"), 1);
    auto key = [](const uint8_t* px, int label) { return std::string(reinterpret_cast<const char*>(px), 784) + char(label); };
    std::unordered_map<std::string, int64_t> balance;  // source count − written count
    for (uint64_t i = 0; i < images.count(); ++i) ++balance[key(images.item(i), *labels.item(i))];
    for (const DroppedSample& d : m.find_split(split)->dropped) {
      uint64_t i = std::stoull(d.source.substr(d.source.find('#') + 1));
      EXPECT_EQ(d.label, *labels.item(i));
      --balance[key(images.item(i), *labels.item(i))];
    }
    std::vector<Record> recs = read_split(t / "out", m, split);
    std::vector<std::string> keys(recs.size());
    tbb::parallel_for(size_t{0}, recs.size(), [&](size_t i) {
      Image img = decode_image(recs[i].encoded);
      if (img.width == 28 && img.height == 28 && img.channels == 1 && recs[i].format == "png")
        keys[i] = key(img.pixels.data(), static_cast<int>(recs[i].label));
    });
    for (const std::string& k : keys) {
      auto it = balance.find(k);
      ASSERT_NE(it, balance.end()) << "a record that is no source image (or whose label differs)";
      --it->second;
    }
    for (const auto& [k, n] : balance) ASSERT_EQ(n, 0) << "a source image written " << -n << " extra times";
  }

  CheckOptions co;
  co.dir = t / "out";
  co.quiet = true;
  CheckReport cr = check_shard_set(co);
  EXPECT_TRUE(cr.ok()) << cr.error_count() << " problems";
  EXPECT_EQ(cr.records, 60000u - 60000u % 7 + 10000u);
  EXPECT_EQ(m.find_split("train")->dropped.size(), 60000u % 7);
}

}  // namespace
}  // namespace fastnn::converters
