// convert tfrecord and check without a manifest: foreign key spellings and formats, the index pass
// and the shuffled copy pass (every record once, labels kept, bytes unchanged), split and class
// resolution, hostile inputs (bad labels, CRC damage, compressed input, a file changed after the
// scan), and the manifest-less check.
#include <gtest/gtest.h>

#include <map>

#include "converters/foreign_record.h"
#include "converters/shard_check.h"
#include "converters/tfrecord_source.h"
#include "core/image.h"
#include "tests/unit/converters/convert_test_util.h"

namespace fastnn::converters {
namespace {

using testing::TempDir;
using testing::read_file;
using testing::write_file;

std::string gray_png(int seed, int w = 6, int h = 5) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return encode_png(px.data(), w, h, 1);
}
std::string rgb_jpeg(int seed) {
  std::vector<uint8_t> px(8 * 8 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(seed * 13 + i);
  return encode_jpeg(px.data(), 8, 8, 3);
}

// TF-slim's image_to_tfexample: no image/channels, format "jpg" / "png".
std::string slim_record(const std::string& encoded, const char* format, int64_t label, int64_t h, int64_t w) {
  ExampleBuilder b;
  b.add_bytes("image/encoded", encoded).add_bytes("image/format", format).add_int64("image/class/label", label);
  b.add_int64("image/height", h).add_int64("image/width", w);
  return b.serialize();
}

void write_shard(const std::string& path, const std::vector<std::string>& records) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  TFRecordWriter w(path);
  for (const std::string& r : records) w.write(r);
  w.close();
}

TEST(ForeignRecord, KeySpellingsAndFormats) {
  const ForeignRecordParser p;
  const std::string png = gray_png(1), jpg = rgb_jpeg(2);
  ForeignRecord r = p.parse(slim_record(jpg, "jpg", 3, 8, 8));
  EXPECT_STREQ(r.format, "jpeg");
  EXPECT_EQ(r.label, 3);
  EXPECT_EQ(r.channels, 3);
  EXPECT_EQ(r.record_channels, 0);  // TF-slim writes none
  EXPECT_FALSE(r.format_mismatch);
  r = p.parse(slim_record(png, "JPEG", 0, 5, 6));  // ImageNet's spelling, but the bytes are a PNG
  EXPECT_STREQ(r.format, "png");
  EXPECT_TRUE(r.format_mismatch);
  EXPECT_EQ(r.width, 6);
  // TensorFlow's MNIST tutorial: image_raw, label, height, width, depth.
  ExampleBuilder b;
  b.add_bytes("image_raw", std::string(4 * 3, 'x')).add_int64("label", 7).add_int64("height", 4).add_int64("width", 3);
  r = p.parse(b.serialize());
  EXPECT_STREQ(r.format, "raw");
  EXPECT_EQ(r.channels, 1);  // bytes / (h × w)
  EXPECT_EQ(r.label, 7);
  // image/format absent: the signature decides.
  b.clear();
  b.add_bytes("image/encoded", png).add_int64("image/label", 1);
  EXPECT_STREQ(p.parse(b.serialize()).format, "png");
}

TEST(ForeignRecord, HostileRecordsThrowWithTheReason) {
  const ForeignRecordParser p;
  auto reason = [&](const std::string& rec) {
    try {
      p.parse(rec);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ExampleBuilder b;
  b.add_int64("image/class/label", 1);
  EXPECT_NE(reason(b.serialize()).find("no image bytes"), std::string::npos);
  b.clear();
  b.add_bytes("image/encoded", gray_png(0));
  EXPECT_NE(reason(b.serialize()).find("no label"), std::string::npos);
  b.clear();
  b.add_bytes("image/encoded", gray_png(0)).add_bytes("image/class/label", "3");  // wrong type
  EXPECT_NE(reason(b.serialize()), "accepted");
  EXPECT_NE(reason(slim_record(gray_png(0), "gif", 0, 5, 6)).find("image/format \"gif\""), std::string::npos);
  EXPECT_NE(reason(slim_record("not an image", "jpg", 0, 5, 6)).find("not a JPEG or PNG"), std::string::npos);
  EXPECT_NE(reason(slim_record(std::string(10, 'x'), "raw", 0, 5, 6)).find("raw image"), std::string::npos);
  EXPECT_NE(reason(slim_record(std::string(10, 'x'), "raw", 0, 100000, 100000)).find("over the limits"), std::string::npos);
  EXPECT_NE(reason("\xff\xff garbage"), "accepted");
}

// A TF-slim-like layout: 2 train shards of unequal size (sorted by label: unshuffled), 1 validation
// shard, labels.txt.
struct Layout {
  TempDir tmp;
  std::map<std::string, int64_t> label_of;  // encoded bytes → label
  Layout() {
    std::vector<std::string> t0, t1, v;
    for (int i = 0; i < 30; ++i) {
      const std::string enc = i % 2 ? gray_png(i) : rgb_jpeg(i);
      const int64_t label = i % 3;
      label_of[enc] = label;
      const std::string rec = slim_record(enc, i % 2 ? "png" : "jpg", label, i % 2 ? 5 : 8, i % 2 ? 6 : 8);
      (i < 12 ? v : i < 25 ? t0 : t1).push_back(rec);
    }
    write_shard(tmp / "d/flowers_train_00000-of-00002.tfrecord", t0);
    write_shard(tmp / "d/flowers_train_00001-of-00002.tfrecord", t1);
    write_shard(tmp / "d/flowers_validation_00000-of-00001.tfrecord", v);
    write_file(tmp / "d/labels.txt", "0:daisy\n1:roses\n2:tulips\n");
  }
  TFRecordSourceOptions options() const { return {.patterns = {tmp / "d/flowers_*.tfrecord"}}; }
};

TEST(TFRecordSource, ReshardsEveryRecordOnceWithItsLabel) {
  Layout l;
  TFRecordSource src(l.options());
  ConvertResult r = run_conversion(src, testing::options_for(l.tmp / "out", 2, 2, 5));
  const Manifest& m = r.manifest;
  EXPECT_EQ(m.dataset, "tfrecord");
  EXPECT_EQ(m.class_names, (std::vector<std::string>{"daisy", "roses", "tulips"}));
  ASSERT_EQ(m.splits.size(), 2u);
  EXPECT_EQ(m.splits[0].name, "train");
  EXPECT_EQ(m.splits[1].name, "validation");
  EXPECT_EQ(m.splits[0].num_records, 16u);  // 18 train records, 4 equal shards: 2 dropped
  EXPECT_EQ(m.splits[0].dropped.size(), 2u);
  EXPECT_EQ(m.splits[1].num_records, 12u);
  std::map<std::string, int> seen;
  for (const char* split : {"train", "validation"})
    for (const testing::Record& rec : testing::read_split(l.tmp / "out", m, split)) {
      ASSERT_TRUE(l.label_of.count(rec.encoded)) << "bytes changed";
      EXPECT_EQ(rec.label, l.label_of[rec.encoded]);
      EXPECT_EQ(rec.format, detect_image_format(rec.encoded) == ImageFormat::kPng ? "png" : "jpeg");
      EXPECT_EQ(rec.channels, rec.format == "png" ? 1 : 3);
      ++seen[rec.encoded];
    }
  EXPECT_EQ(seen.size(), 28u);
  for (const auto& [enc, n] : seen) EXPECT_EQ(n, 1);
  // The dropped ones are named by file and offset.
  EXPECT_NE(m.splits[0].dropped[0].source.find("flowers_train_0000"), std::string::npos);
  EXPECT_NE(m.splits[0].dropped[0].source.find(".tfrecord#"), std::string::npos);
  CheckOptions co;
  co.dir = l.tmp / "out";
  co.quiet = true;
  co.decode = true;
  EXPECT_TRUE(check_shard_set(co).ok());
}

TEST(TFRecordSource, SplitsClassesAndOffsets) {
  Layout l;
  {  // --split: everything in one split; --labels-offset drops names and shifts labels (label 0 is bad then).
    TFRecordSourceOptions o = l.options();
    o.split = "train";
    o.labels_offset = 1;
    TFRecordSource src(o);
    EXPECT_THROW(run_conversion(src, testing::options_for(l.tmp / "o1", 1, 1)), FormatError);
    ConvertOptions co = testing::options_for(l.tmp / "o2", 1, 1);
    co.skip_bad = true;
    ConvertResult r = run_conversion(src, co);
    EXPECT_EQ(r.manifest.class_names, (std::vector<std::string>{"roses", "tulips"}));
    ASSERT_EQ(r.manifest.splits.size(), 1u);
    EXPECT_EQ(r.manifest.splits[0].num_records, 20u);  // the 10 records of label 0 skipped
    EXPECT_EQ(r.manifest.splits[0].skipped.size(), 10u);
    EXPECT_NE(r.manifest.splits[0].skipped[0].reason.find("minus labels_offset 1 is negative"), std::string::npos);
  }
  {  // No labels.txt: the largest label + 1 classes, named by number; --num-classes bounds labels.
    std::filesystem::remove(l.tmp / "d/labels.txt");
    TFRecordSource src(l.options());
    ConvertResult r = run_conversion(src, testing::options_for(l.tmp / "o3", 1, 1));
    EXPECT_EQ(r.manifest.class_names, (std::vector<std::string>{"0", "1", "2"}));
    TFRecordSourceOptions o = l.options();
    o.num_classes = 2;
    TFRecordSource two(o);
    try {
      run_conversion(two, testing::options_for(l.tmp / "o4", 1, 1));
      FAIL();
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("label 2 is outside the 2 classes"), std::string::npos) << m;
      EXPECT_NE(m.find(".tfrecord: record "), std::string::npos) << m;
      EXPECT_NE(m.find(" at offset "), std::string::npos) << m;
    }
  }
  {  // A file whose name carries no split.
    write_shard(l.tmp / "e/shard-00000.tfrecord", {slim_record(gray_png(1), "png", 0, 5, 6)});
    TFRecordSource src({.patterns = {l.tmp / "e/*.tfrecord"}});
    EXPECT_THROW(run_conversion(src, testing::options_for(l.tmp / "o5", 1, 1)), ConfigError);
  }
}

// Inputs from several folders (parts converted apart, then merged): their labels.txt must number the
// classes alike, or a record's label would name another class once merged. One list may extend another
// (a part lists classes up to its largest label): the longest is taken.
TEST(TFRecordSource, FoldersLabelsMustAgreeOrTheLongestExtendsTheOthers) {
  TempDir t;
  write_shard(t / "a/part_train-00000-of-00001.tfrecord", {slim_record(gray_png(1), "png", 0, 5, 6)});
  write_shard(t / "b/part_train-00000-of-00001.tfrecord", {slim_record(gray_png(2), "png", 2, 5, 6)});
  write_file(t / "a/labels.txt", "0:daisy\n");
  write_file(t / "b/labels.txt", "0:daisy\n1:roses\n2:tulips\n");
  TFRecordSourceOptions o{.patterns = {t / "a/*.tfrecord", t / "b/*.tfrecord"}};
  TFRecordSource extended(o);
  ConvertResult r = run_conversion(extended, testing::options_for(t / "merged", 1, 1));
  EXPECT_EQ(r.manifest.class_names, (std::vector<std::string>{"daisy", "roses", "tulips"}));
  // b numbers roses 0: merged as a's, its roses would become daisies.
  write_file(t / "b/labels.txt", "0:roses\n1:tulips\n2:daisy\n");
  TFRecordSource conflicting(o);
  try {
    run_conversion(conflicting, testing::options_for(t / "refused", 1, 1));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("a/labels.txt says class 0 is \"daisy\", "), std::string::npos) << m;
    EXPECT_NE(m.find("b/labels.txt says \"roses\""), std::string::npos) << m;
  }
  // --labels-file says which map the labels follow: taken as given.
  o.labels_file = t / "b/labels.txt";
  TFRecordSource told(o);
  EXPECT_EQ(run_conversion(told, testing::options_for(t / "told", 1, 1)).manifest.class_names,
            (std::vector<std::string>{"roses", "tulips", "daisy"}));
}

TEST(TFRecordSource, HostileInputs) {
  Layout l;
  {  // GZIP input: refused with the reason.
    std::filesystem::create_directories(l.tmp / "z");
    TFRecordWriter w(l.tmp / "z/x_train.tfrecord.gz", Compression::kGzip);
    w.write(slim_record(gray_png(1), "png", 0, 5, 6));
    w.close();
    TFRecordSource src({.patterns = {l.tmp / "z/*.gz"}});
    try {
      run_conversion(src, testing::options_for(l.tmp / "o1", 1, 1));
      FAIL();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("gzip-compressed"), std::string::npos) << e.what();
    }
  }
  {  // A pattern that matches nothing names itself.
    TFRecordSource src({.patterns = {l.tmp / "d/*.nothing"}});
    EXPECT_THROW(run_conversion(src, testing::options_for(l.tmp / "o2", 1, 1)), ConfigError);
  }
  {  // A flipped data byte: a FormatError naming the file and offset; nothing final-named written.
    const std::string f = l.tmp / "d/flowers_validation_00000-of-00001.tfrecord";
    std::string bytes = read_file(f);
    bytes[bytes.size() - 30] ^= 1;
    write_file(f, bytes);
    TFRecordSource src(l.options());
    try {
      run_conversion(src, testing::options_for(l.tmp / "o3", 1, 1));
      FAIL();
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("flowers_validation_00000-of-00001.tfrecord: record 11 at offset"), std::string::npos) << m;
      EXPECT_NE(m.find("CRC"), std::string::npos) << m;
    }
    EXPECT_TRUE(testing::visible_names(l.tmp / "o3").empty());
  }
}

TEST(PlainCheck, WithoutAManifest) {
  Layout l;
  CheckOptions o;
  o.dir = l.tmp / "d";
  o.quiet = true;
  o.decode = true;
  o.alpha = 0.01;
  CheckReport r = check_shard_set(o);
  EXPECT_FALSE(r.has_manifest);
  EXPECT_EQ(r.labels_file, l.tmp / "d/labels.txt");
  EXPECT_EQ(r.records, 30u);
  ASSERT_EQ(r.splits.size(), 2u);
  EXPECT_EQ(r.splits[0].name, "train");
  EXPECT_EQ(r.splits[0].histogram, (std::vector<uint64_t>{6, 6, 6}));
  EXPECT_FALSE(r.not_checked.empty());
  // Unequal train shards (13 / 5): a warning, not an error. Balanced enough at this alpha.
  bool warned = false;
  for (const std::string& w : r.warnings) warned = warned || w.find("train shards hold 5..13") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_TRUE(r.ok()) << r.error_count();

  // A shard of a "-of-" set missing, and a label beyond labels.txt's classes.
  std::filesystem::remove(l.tmp / "d/flowers_train_00001-of-00002.tfrecord");
  write_file(l.tmp / "d/labels.txt", "0:daisy\n1:roses\n");
  r = check_shard_set(o);
  EXPECT_FALSE(r.ok());
  ASSERT_FALSE(r.splits[0].errors.empty());
  EXPECT_NE(r.splits[0].errors[0].find("1 of the 2 shards named -NNNNN-of-2 are missing (index 1)"), std::string::npos)
      << r.splits[0].errors[0];
  ASSERT_FALSE(r.splits[0].shards[0].errors.empty());
  EXPECT_NE(r.splits[0].shards[0].errors[0].find("is outside labels.txt's 2 classes"), std::string::npos)
      << r.splits[0].shards[0].errors[0];

  // A record whose declared format is wrong is an error naming both.
  write_shard(l.tmp / "f/x_test.tfrecord", {slim_record(gray_png(1), "jpg", 0, 5, 6)});
  o.dir = l.tmp / "f/*.tfrecord";
  r = check_shard_set(o);
  ASSERT_EQ(r.splits.size(), 1u);
  EXPECT_EQ(r.splits[0].name, "test");
  ASSERT_EQ(r.splits[0].shards[0].errors.size(), 1u);
  EXPECT_NE(r.splits[0].shards[0].errors[0].find("image/format says jpg but the image is png"), std::string::npos);

  // An empty folder: neither manifest nor shards.
  std::filesystem::create_directories(l.tmp / "empty");
  o.dir = l.tmp / "empty";
  EXPECT_THROW(check_shard_set(o), ConfigError);
}

}  // namespace
}  // namespace fastnn::converters
