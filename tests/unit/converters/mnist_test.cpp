// MNIST-format conversion end to end on IDX files the test writes: every record decodes to its
// source image with its label, every source image is written once or reported dropped/padded, and
// every bad input fails with file and offset and leaves no final-named file.
#include "converters/mnist.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <numeric>

#include "convert_test_util.h"
#include "converters/idx.h"

namespace fastnn::converters {
namespace {

using namespace testing;

constexpr int kRows = 5, kCols = 7;

struct MnistFiles {
  std::string images[2], labels[2];  // train, test
};

std::string gzip(std::string_view data, const std::string& path) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
  return read_file(path);
}

// Writes train (n_train) and test (n_test) IDX files; images are random, so each is unique.
MnistFiles write_mnist(const std::string& dir, uint32_t n_train, uint32_t n_test, bool gz_images = true) {
  MnistFiles f;
  const char* stems[2] = {"train", "t10k"};
  uint32_t counts[2] = {n_train, n_test};
  for (int s = 0; s < 2; ++s) {
    f.images[s] = random_string(size_t{counts[s]} * kRows * kCols, 100 + s);
    f.labels[s].resize(counts[s]);
    for (uint32_t i = 0; i < counts[s]; ++i) f.labels[s][i] = static_cast<char>((i * 7 + s) % 10);
    std::string img = idx_bytes({counts[s], kRows, kCols}, f.images[s]);
    std::string lab = idx_bytes({counts[s]}, f.labels[s]);
    std::string base = dir + "/" + stems[s];
    fs::create_directories(dir);
    if (gz_images) gzip(img, base + "-images-idx3-ubyte.gz");
    else write_file(base + "-images-idx3-ubyte", img);
    write_file(base + "-labels-idx1-ubyte", lab);
  }
  return f;
}

std::string image_of(const MnistFiles& f, int split, size_t i) {
  return f.images[split].substr(i * kRows * kCols, kRows * kCols);
}

ConvertResult convert_mnist(const std::string& in, const ConvertOptions& o, int num_classes = 10) {
  MnistOptions mo;
  mo.dir = in;
  mo.num_classes = num_classes;
  MnistSource src(mo);
  return run_conversion(src, o);
}

// Decodes every record of a split and maps it back to its source index.
std::vector<size_t> match_records(const std::vector<Record>& recs, const MnistFiles& f, int split) {
  std::map<std::string, size_t> by_pixels;
  for (size_t i = 0; i < f.labels[split].size(); ++i) by_pixels[image_of(f, split, i)] = i;
  std::vector<size_t> out;
  for (const Record& r : recs) {
    EXPECT_EQ(r.format, "png");
    EXPECT_EQ(r.height, kRows);
    EXPECT_EQ(r.width, kCols);
    EXPECT_EQ(r.channels, 1);
    Image img = decode_image(r.encoded);
    EXPECT_EQ(img.channels, 1);
    std::string pixels(img.pixels.begin(), img.pixels.end());
    auto it = by_pixels.find(pixels);
    if (it == by_pixels.end()) {
      ADD_FAILURE() << "record in " << r.shard << " matches no source image";
      continue;
    }
    EXPECT_EQ(r.label, f.labels[split][it->second]) << "source image " << it->second;
    out.push_back(it->second);
  }
  return out;
}

size_t index_of(const std::string& source) { return std::stoul(source.substr(source.find('#') + 1)); }

TEST(Mnist, EverySampleOnceOrAccountedFor) {
  TempDir t;
  MnistFiles f = write_mnist(t / "in", 103, 21);
  ConvertOptions o = options_for(t / "out", 2, 2, 7);
  ConvertResult r = convert_mnist(t / "in", o);
  const Manifest& m = r.manifest;
  EXPECT_EQ(m.dataset, "mnist");
  EXPECT_EQ(m.class_names.size(), 10u);
  EXPECT_EQ(m.image.format, "png");
  EXPECT_EQ(m.image.height, kRows);
  EXPECT_EQ(m.image.channels, 1);
  EXPECT_EQ(read_manifest(t / "out").splits[0].num_records, 100u);
  EXPECT_EQ(read_file(t / "out/labels.txt").substr(0, 8), "0:0\n1:1\n");
  EXPECT_EQ(visible_names(t / "out"),
            (std::set<std::string>{"labels.txt", "manifest.json", "test-00000-of-00004.tfrecord",
                                   "test-00001-of-00004.tfrecord", "test-00002-of-00004.tfrecord",
                                   "test-00003-of-00004.tfrecord", "train-00000-of-00004.tfrecord",
                                   "train-00001-of-00004.tfrecord", "train-00002-of-00004.tfrecord",
                                   "train-00003-of-00004.tfrecord"}));

  // Train: 103 over 4 shards, drop → 25 each, 3 dropped and named in the manifest.
  std::vector<Record> train = read_split(t / "out", m, "train");
  EXPECT_EQ(shard_sizes(train, 4), (std::vector<size_t>{25, 25, 25, 25}));
  std::vector<size_t> seen = match_records(train, f, 0);
  const SplitInfo& st = *m.find_split("train");
  ASSERT_EQ(st.dropped.size(), 3u);
  std::vector<int> count(103, 0);
  for (size_t i : seen) ++count[i];
  for (const DroppedSample& d : st.dropped) {
    EXPECT_EQ(d.source.substr(0, 26), "train-images-idx3-ubyte.gz");
    EXPECT_EQ(d.label, f.labels[0][index_of(d.source)]);
    --count[index_of(d.source)];
  }
  size_t once = std::count(count.begin(), count.end(), 1), minus = std::count(count.begin(), count.end(), -1);
  EXPECT_EQ(once, 100u);
  EXPECT_EQ(minus, 3u);  // a dropped sample is exactly one never written
  // Manifest per-shard histograms equal what the shards hold.
  for (size_t k = 0; k < 4; ++k) {
    std::vector<uint64_t> h(10, 0);
    for (const Record& rec : train)
      if (rec.shard_index == k) ++h[rec.label];
    EXPECT_EQ(h, st.shards[k].label_histogram);
  }

  // Test: nothing lost, sizes 6,5,5,5.
  std::vector<Record> test = read_split(t / "out", m, "test");
  std::vector<size_t> tseen = match_records(test, f, 1);
  std::sort(tseen.begin(), tseen.end());
  std::vector<size_t> all(21);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(tseen, all);
  std::vector<size_t> sizes = shard_sizes(test, 4);
  EXPECT_EQ(*std::max_element(sizes.begin(), sizes.end()) - *std::min_element(sizes.begin(), sizes.end()), 1u);
}

TEST(Mnist, PadRepeatsRecordedSamples) {
  TempDir t;
  MnistFiles f = write_mnist(t / "in", 101, 4, false);
  ConvertOptions o = options_for(t / "out", 1, 4, 3);
  o.remainder = Remainder::kPad;
  ConvertResult r = convert_mnist(t / "in", o);
  std::vector<Record> train = read_split(t / "out", r.manifest, "train");
  EXPECT_EQ(shard_sizes(train, 4), (std::vector<size_t>{26, 26, 26, 26}));
  const SplitInfo& st = *r.manifest.find_split("train");
  ASSERT_EQ(st.padded.size(), 3u);
  std::vector<int> count(101, 0);
  for (size_t i : match_records(train, f, 0)) ++count[i];
  for (const PaddedSample& p : st.padded) {
    EXPECT_EQ(p.label, f.labels[0][index_of(p.source)]);
    --count[index_of(p.source)];
    // The copy is in the shard the manifest names.
    bool found = false;
    for (const Record& rec : train)
      if (static_cast<int64_t>(rec.shard_index) == p.shard) {
        Image img = decode_image(rec.encoded);
        found = found || std::string(img.pixels.begin(), img.pixels.end()) == image_of(f, 0, index_of(p.source));
      }
    EXPECT_TRUE(found) << p.source;
  }
  EXPECT_EQ(std::count(count.begin(), count.end(), 1), 101);
}

TEST(Mnist, StratifiedShards) {
  TempDir t;
  write_mnist(t / "in", 230, 10);
  ConvertOptions o = options_for(t / "out", 3, 2, 11);
  o.stratify = true;
  ConvertResult r = convert_mnist(t / "in", o);
  for (const SplitInfo& s : r.manifest.splits)
    for (size_t c = 0; c < 10; ++c) {
      uint64_t lo = UINT64_MAX, hi = 0;
      for (const ShardInfo& sh : s.shards) {
        lo = std::min(lo, sh.label_histogram[c]);
        hi = std::max(hi, sh.label_histogram[c]);
      }
      EXPECT_LE(hi - lo, 1u) << s.name << " class " << c;
    }
}

TEST(Mnist, DeterministicForAnyThreadCountSeedChangesOrder) {
  TempDir t;
  write_mnist(t / "in", 300, 50);
  ConvertOptions o = options_for(t / "one", 2, 2, 5);
  o.threads = 1;
  o.compression = Compression::kGzip;
  convert_mnist(t / "in", o);
  o.output = t / "many";
  o.threads = 4;
  convert_mnist(t / "in", o);
  EXPECT_EQ(all_files(t / "one"), all_files(t / "many"));
  o.output = t / "other";
  o.seed = 6;
  convert_mnist(t / "in", o);
  EXPECT_NE(read_file(t / "one/train-00000-of-00004.tfrecord"), read_file(t / "other/train-00000-of-00004.tfrecord"));
}

TEST(Mnist, BadInputsNameFileAndOffsetAndLeaveNoOutput) {
  TempDir t;
  MnistFiles f = write_mnist(t / "good", 20, 5, false);
  auto variant = [&](const std::string& name, const std::string& file, const std::string& bytes) {
    fs::copy(t / "good", t / name, fs::copy_options::recursive);
    write_file(t / name + "/" + file, bytes);
    return t / name;
  };
  auto expect_fails = [&](const std::string& in, std::initializer_list<std::string> needles) {
    std::string out = in + "-out";
    expect_error([&] { convert_mnist(in, options_for(out, 1, 2)); }, needles);
    EXPECT_EQ(names_except_lock(out), std::set<std::string>{}) << in;
  };
  std::string img = idx_bytes({20, kRows, kCols}, f.images[0]);
  // Truncated images: the last image cut short.
  expect_fails(variant("trunc", "train-images-idx3-ubyte", img.substr(0, img.size() - 10)),
               {"train-images-idx3-ubyte", "truncated", "offset 706", "19 whole items"});
  // Wrong magic (an idx1 header where idx3 is expected).
  std::string bad = img;
  bad[3] = 1;
  expect_fails(variant("magic", "train-images-idx3-ubyte", bad), {"train-images-idx3-ubyte", "offset 0", "magic"});
  // Image/label count mismatch.
  expect_fails(variant("count", "train-labels-idx1-ubyte", idx_bytes({19}, f.labels[0].substr(0, 19))),
               {"count mismatch", "20 images", "19 labels"});
  // A label out of range: error with offset 8 + index; with --skip-bad skipped and listed.
  std::string labels = f.labels[0];
  labels[13] = 12;
  std::string in = variant("label", "train-labels-idx1-ubyte", idx_bytes({20}, labels));
  expect_fails(in, {"train-labels-idx1-ubyte", "offset 21", "label 12 is outside 0..9"});
  ConvertOptions o = options_for(in + "-skip", 1, 2);
  o.skip_bad = true;
  ConvertResult r = convert_mnist(in, o);
  const SplitInfo& st = *r.manifest.find_split("train");
  ASSERT_EQ(st.skipped.size(), 1u);
  EXPECT_EQ(st.skipped[0].source, "train-labels-idx1-ubyte#13");
  EXPECT_EQ(st.num_source_samples, 19u);
  EXPECT_EQ(st.num_records, 18u);  // 19 over 2 shards, one dropped
  // Missing files, a gzip file cut short, trailing garbage.
  fs::copy(t / "good", t / "missing", fs::copy_options::recursive);
  fs::remove(t / "missing/train-labels-idx1-ubyte");
  expect_fails(t / "missing", {"train-labels-idx1-ubyte"});
  std::string gz = gzip(img, t / "x.gz");
  fs::copy(t / "good", t / "gzcut", fs::copy_options::recursive);
  fs::remove(t / "gzcut/train-images-idx3-ubyte");
  write_file(t / "gzcut/train-images-idx3-ubyte.gz", gz.substr(0, gz.size() / 2));
  expect_fails(t / "gzcut", {"train-images-idx3-ubyte.gz", "offset"});
  expect_fails(variant("trailing", "train-images-idx3-ubyte", img + "xy"), {"offset 716", "unexpected bytes"});
}

TEST(Idx, HeaderLimitsBoundAllocation) {
  // A header claiming 2^31 items of 4096×4096: refused from the header alone.
  std::string h = idx_bytes({0x80000000u, 4096, 4096}, "");
  expect_error([&] { parse_idx(h, "big", 3); }, {"big", "limit"});
  // Within limits but lying about the count: fails as truncated, having held only the real bytes.
  std::string lie = idx_bytes({1000000, 28, 28}, std::string(784, 'x'));
  expect_error([&] { parse_idx(lie, "lie", 3); }, {"truncated", "1 whole items"});
  expect_error([&] { parse_idx(idx_bytes({0, 28, 28}, ""), "zero", 3); }, {"dimension 0 is 0"});
  expect_error([&] { parse_idx(std::string("\0\0", 2), "short", 3); }, {"truncated IDX header"});
  IdxArray a = parse_idx(idx_bytes({2, 2, 3}, "abcdefghijkl"), "ok", 3);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.item_bytes(), 6u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.item(1)), 6), "ghijkl");
  EXPECT_EQ(a.header_bytes, 16u);
}

// read_idx inflates a one-member gzip file whole (libdeflate) and streams everything else through
// zlib: both give the plain file's items, and the whole-file path declines what it must not take.
TEST(Idx, GzipFilesReadAsThePlainFileWhicheverPathInflatesThem) {
  TempDir t;
  const std::string items = random_string(40 * kRows * kCols, 7);
  const std::string plain = idx_bytes({40, kRows, kCols}, items);
  write_file(t / "plain", plain);
  const std::string one = gzip(plain, t / "one.gz");
  write_file(t / "two.gz", gzip(plain.substr(0, 100), t / "a.gz") + gzip(plain.substr(100), t / "b.gz"));
  write_file(t / "garbage.gz", one + "xyz");  // zlib ignores bytes after the last member
  // Zeros inflate more than 16-fold: a header that big is not taken on the file's word.
  const std::string zeros = idx_bytes({4000, kRows, kCols}, std::string(4000 * kRows * kCols, '\0'));
  write_file(t / "zeros", zeros);
  gzip(zeros, t / "zeros.gz");
  for (const char* name : {"plain", "one.gz", "two.gz", "garbage.gz"}) {
    IdxArray a = read_idx(t / name, 3);
    EXPECT_EQ(a.data, items) << name;
    IdxArray h = read_idx_header(t / name, 3);
    EXPECT_EQ(inflate_one_gzip_member(t / name, &h), std::string(name) == "one.gz") << name;
    EXPECT_EQ(h.data, std::string(name) == "one.gz" ? items : "") << name;
  }
  EXPECT_EQ(read_idx(t / "zeros.gz", 3).data, read_idx(t / "zeros", 3).data);
  IdxArray z = read_idx_header(t / "zeros.gz", 3);
  EXPECT_FALSE(inflate_one_gzip_member(t / "zeros.gz", &z));
  // More items than the header declares, fewer, a damaged stream: declined, and the streaming
  // reader names the problem with its offset.
  gzip(plain + "x", t / "long.gz");
  expect_error([&] { read_idx(t / "long.gz", 3); }, {"long.gz", "offset 1416", "unexpected bytes"});
  IdxArray lh = read_idx_header(t / "long.gz", 3);
  EXPECT_FALSE(inflate_one_gzip_member(t / "long.gz", &lh));
  EXPECT_TRUE(lh.data.empty());
  gzip(plain.substr(0, plain.size() - 5), t / "short.gz");
  expect_error([&] { read_idx(t / "short.gz", 3); }, {"short.gz", "truncated", "39 whole items"});
  std::string damaged = one;
  damaged[damaged.size() / 2] ^= 0x55;
  write_file(t / "damaged.gz", damaged);
  expect_error([&] { read_idx(t / "damaged.gz", 3); }, {"damaged.gz", "offset"});
  // A file whose header changed after it was read: declined.
  IdxArray stale = read_idx_header(t / "one.gz", 3);
  gzip(idx_bytes({20, 2 * kRows, kCols}, items), t / "one.gz");
  EXPECT_FALSE(inflate_one_gzip_member(t / "one.gz", &stale));
}

}  // namespace
}  // namespace fastnn::converters
