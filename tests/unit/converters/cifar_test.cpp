// CIFAR-10/100 binary conversion end to end on files the test writes: pixels come back as RGB PNG
// equal to the source planes interleaved, fine and coarse labels and class names survive, and bad
// files fail with file, record and offset.
#include "converters/cifar.h"

#include <gtest/gtest.h>

#include <map>

#include "convert_test_util.h"

namespace fastnn::converters {
namespace {

using namespace testing;

constexpr int kPixels = 3072;

struct Written {
  std::map<std::string, std::pair<int, int>> by_hwc;  // interleaved pixels → (fine, coarse)
};

// Writes CIFAR files with `per_file` random records each; labels cycle.
Written write_cifar(const std::string& dir, bool c100, int per_file, uint32_t seed) {
  Written w;
  std::vector<std::string> files = c100 ? std::vector<std::string>{"train.bin", "test.bin"}
                                        : std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                                   "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
  int k = 0;
  for (const std::string& name : files) {
    std::string bytes;
    for (int r = 0; r < per_file; ++r, ++k) {
      int fine = c100 ? (k * 37) % 100 : k % 10, coarse = (k * 3) % 20;
      if (c100) bytes += static_cast<char>(coarse);
      bytes += static_cast<char>(fine);
      std::string planes = random_string(kPixels, seed + k);
      bytes += planes;
      std::string hwc(kPixels, '\0');
      for (int i = 0; i < 1024; ++i)
        for (int c = 0; c < 3; ++c) hwc[3 * i + c] = planes[c * 1024 + i];
      w.by_hwc[hwc] = {fine, c100 ? coarse : -1};
    }
    write_file(dir + "/" + name, bytes);
  }
  return w;
}

ConvertResult convert_cifar(const std::string& in, bool c100, const ConvertOptions& o) {
  CifarOptions co;
  co.dir = in;
  co.cifar100 = c100;
  CifarSource src(co);
  return run_conversion(src, o);
}

void expect_matches(const std::string& out, const Manifest& m, const Written& w, size_t expected_records) {
  size_t n = 0;
  std::set<std::string> seen;
  for (const SplitInfo& s : m.splits)
    for (const Record& r : read_split(out, m, s.name)) {
      ++n;
      EXPECT_EQ(r.format, "png");
      EXPECT_EQ(r.height, 32);
      EXPECT_EQ(r.channels, 3);
      Image img = decode_image(r.encoded);
      ASSERT_EQ(img.channels, 3);
      std::string px(img.pixels.begin(), img.pixels.end());
      auto it = w.by_hwc.find(px);
      ASSERT_NE(it, w.by_hwc.end()) << "record matches no source image";
      EXPECT_EQ(r.label, it->second.first);
      EXPECT_EQ(r.coarse, it->second.second);
      EXPECT_TRUE(seen.insert(px).second) << "written twice";
    }
  EXPECT_EQ(n, expected_records);
}

TEST(Cifar, Cifar10EndToEnd) {
  TempDir t;
  Written w = write_cifar(t / "in/cifar-10-batches-bin", false, 9, 1);  // the parent folder works too
  write_file(t / "in/cifar-10-batches-bin/batches.meta.txt",
             "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n");
  ConvertResult r = convert_cifar(t / "in", false, options_for(t / "out", 2, 2));
  EXPECT_EQ(r.manifest.class_names[9], "truck");
  EXPECT_EQ(r.manifest.find_split("train")->num_records, 44u);  // 45 over 4 shards
  EXPECT_EQ(r.manifest.find_split("test")->num_records, 9u);
  EXPECT_EQ(r.manifest.find_split("train")->dropped.size(), 1u);
  EXPECT_EQ(read_file(t / "out/labels.txt").substr(0, 11), "0:airplane\n");
  expect_matches(t / "out", r.manifest, w, 53);
  const std::string& d = r.manifest.find_split("train")->dropped[0].source;
  EXPECT_EQ(d.substr(0, 11), "data_batch_") << d;
}

TEST(Cifar, Cifar100FineAndCoarse) {
  TempDir t;
  Written w = write_cifar(t / "in", true, 30, 2);
  ConvertResult r = convert_cifar(t / "in", true, options_for(t / "out", 1, 3));
  EXPECT_EQ(r.manifest.class_names.size(), 100u);
  EXPECT_EQ(r.manifest.coarse_class_names.size(), 20u);
  expect_matches(t / "out", r.manifest, w, 60);
}

TEST(Cifar, BadFiles) {
  TempDir t;
  write_cifar(t / "good", false, 4, 3);
  auto variant = [&](const std::string& name) {
    fs::copy(t / "good", t / name, fs::copy_options::recursive);
    return t / name;
  };
  // Size not a multiple of 3073.
  std::string in = variant("size");
  std::string b = read_file(in + "/data_batch_3.bin");
  write_file(in + "/data_batch_3.bin", b + "x");
  expect_error([&] { convert_cifar(in, false, options_for(in + "-out", 1, 1)); },
               {"data_batch_3.bin", "not a multiple of the 3073-byte", "offset 12292"});
  EXPECT_EQ(names_except_lock(in + "-out"), std::set<std::string>{});
  // Label 10 in record 2 of test_batch.bin.
  in = variant("label");
  b = read_file(in + "/test_batch.bin");
  b[2 * 3073] = 10;
  write_file(in + "/test_batch.bin", b);
  expect_error([&] { convert_cifar(in, false, options_for(in + "-out", 1, 1)); },
               {"test_batch.bin", "record 2 at offset 6146", "label 10 is outside 0..9"});
  EXPECT_EQ(names_except_lock(in + "-out"), std::set<std::string>{});
  ConvertOptions o = options_for(in + "-skip", 1, 1);
  o.skip_bad = true;
  ConvertResult r = convert_cifar(in, false, o);
  ASSERT_EQ(r.manifest.find_split("test")->skipped.size(), 1u);
  EXPECT_EQ(r.manifest.find_split("test")->skipped[0].source, "test_batch.bin#2");
  EXPECT_EQ(r.manifest.find_split("test")->num_records, 3u);
  // A missing batch.
  in = variant("missing");
  fs::remove(in + "/data_batch_5.bin");
  expect_error([&] { convert_cifar(in, false, options_for(in + "-out", 1, 1)); }, {"data_batch_5.bin"});
  // A names file with the wrong number of names.
  in = variant("names");
  write_file(in + "/batches.meta.txt", "a\nb\n");
  expect_error([&] { convert_cifar(in, false, options_for(in + "-out", 1, 1)); }, {"batches.meta.txt", "2 class names"});
}

}  // namespace
}  // namespace fastnn::converters
