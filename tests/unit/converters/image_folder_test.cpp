// Image-folder conversion end to end on JPEG and PNG files made by core's encoders: bytes pass through
// unchanged, labels follow the sorted class folders, content decides the format, hidden and non-image
// files are skipped and counted, truncated images and empty class folders are caught, the validation
// hold-out and --resize-shorter-side work.
#include "converters/image_folder.h"

#include <gtest/gtest.h>

#include <map>

#include "convert_test_util.h"
#include "thread_ranks.h"
#include "converters/resize.h"

namespace fastnn::converters {
namespace {

using namespace testing;

std::vector<uint8_t> picture(int w, int h, int c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * c);
  int base = static_cast<int>(rng() % 128);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        v[(static_cast<size_t>(y) * w + x) * c + k] = static_cast<uint8_t>(base + (x * 3 + y * 2 + k * 40) % 100 + rng() % 8);
  return v;
}

std::string jpeg(int w, int h, int c, uint32_t seed) {
  auto p = picture(w, h, c, seed);
  return encode_jpeg(p.data(), w, h, c, 85);
}
std::string png(int w, int h, int c, uint32_t seed) {
  auto p = picture(w, h, c, seed);
  return encode_png(p.data(), w, h, c);
}

// roses (label 1) and daisies (label 0, "daisy" < "roses"), mixed formats and misleading names.
std::map<std::string, int> write_flowers(const std::string& root) {
  std::map<std::string, int> files;  // path → label
  auto put = [&](const std::string& rel, const std::string& bytes, int label) {
    write_file(root + "/" + rel, bytes);
    if (label >= 0) files[root + "/" + rel] = label;
  };
  for (int i = 0; i < 7; ++i) put("roses/r" + std::to_string(i) + ".jpg", jpeg(40 + i, 30, 3, i), 1);
  put("roses/not_a_jpeg.jpg", png(20, 20, 4, 99), 1);    // PNG content, JPEG name: recognised as PNG
  put("roses/deeper/r_gray.JPEG", jpeg(16, 24, 1, 5), 1);  // nested inside the class folder
  for (int i = 0; i < 6; ++i) put("daisy/d" + std::to_string(i) + ".png", png(30, 20 + i, 3, 50 + i), 0);
  put("daisy/photo_without_extension", jpeg(25, 25, 3, 77), 0);
  put("daisy/README.txt", "not an image", -1);  // ignored
  put("daisy/.DS_Store", "hidden", -1);         // ignored
  put(".hidden_class/x.jpg", jpeg(8, 8, 3, 1), -1);  // hidden folder at the root: ignored
  return files;
}

ConvertResult convert_folder(const std::vector<std::string>& roots, const ConvertOptions& o, int resize = 0) {
  ImageFolderOptions fo;
  fo.roots = roots;
  fo.record.resize_shorter_side = resize;
  ImageFolderSource src(fo);
  return run_conversion(src, o);
}

TEST(ImageFolder, PassThroughEverySampleOnce) {
  TempDir t;
  std::map<std::string, int> files = write_flowers(t / "flowers");
  std::map<std::string, std::string> by_bytes;  // bytes → path
  for (const auto& [p, l] : files) by_bytes[read_file(p)] = p;
  ConvertOptions o = options_for(t / "out", 2, 1);
  ConvertResult r = convert_folder({t / "flowers"}, o);
  const Manifest& m = r.manifest;
  EXPECT_EQ(m.class_names, (std::vector<std::string>{"daisy", "roses"}));
  EXPECT_EQ(m.image.format, "");  // mixed
  const SplitInfo& s = *m.find_split("train");
  EXPECT_EQ(s.ignored_files, 3u);  // README.txt, .DS_Store, .hidden_class
  // Each named, in path order, with why.
  ASSERT_EQ(s.ignored.size(), 3u);
  EXPECT_EQ(s.ignored[0].source, t / "flowers/.hidden_class");
  EXPECT_EQ(s.ignored[0].reason, "hidden");
  EXPECT_EQ(s.ignored[1].source, t / "flowers/daisy/.DS_Store");
  EXPECT_EQ(s.ignored[2].source, t / "flowers/daisy/README.txt");
  EXPECT_EQ(s.ignored[2].reason, "not a JPEG or PNG image (unrecognised first bytes)");
  EXPECT_EQ(s.num_source_samples, 16u);
  EXPECT_EQ(s.num_records, 16u);
  std::set<std::string> seen;
  for (const Record& rec : read_split(t / "out", m, "train")) {
    auto it = by_bytes.find(rec.encoded);
    ASSERT_NE(it, by_bytes.end()) << "record bytes are not a source file";
    EXPECT_EQ(rec.label, files[it->second]) << it->second;
    ImageInfo info = read_image_info(rec.encoded);
    EXPECT_EQ(rec.format, image_format_name(info.format));
    EXPECT_EQ(rec.height, info.height);
    EXPECT_EQ(rec.width, info.width);
    EXPECT_EQ(rec.channels, info.channels);
    EXPECT_TRUE(seen.insert(it->second).second);
    if (it->second.find("not_a_jpeg") != std::string::npos) {
      EXPECT_EQ(rec.format, "png");
    }
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(ImageFolder, TruncatedJpegIsAnErrorOrSkipped) {
  TempDir t;
  write_flowers(t / "flowers");
  std::string whole = jpeg(64, 48, 3, 11);
  write_file(t / "flowers/roses/cut.jpg", whole.substr(0, whole.size() / 2));
  expect_error([&] { convert_folder({t / "flowers"}, options_for(t / "out", 1, 1)); },
               {"flowers/roses/cut.jpg", "truncated"});
  EXPECT_EQ(names_except_lock(t / "out"), std::set<std::string>{});
  ConvertOptions o = options_for(t / "out", 1, 1);
  o.skip_bad = true;
  ConvertResult r = convert_folder({t / "flowers"}, o);
  const SplitInfo& s = *r.manifest.find_split("train");
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].source.find("roses/cut.jpg"), std::string::npos);
  EXPECT_NE(s.skipped[0].reason.find("truncated"), std::string::npos);
  EXPECT_EQ(s.num_records, 16u);
  // A .jpg holding text is a bad sample, not an ignored file.
  write_file(t / "flowers/daisy/fake.jpg", "hello");
  expect_error([&] { convert_folder({t / "flowers"}, options_for(t / "out2", 1, 1)); }, {"daisy/fake.jpg", "not a JPEG or PNG"});
}

TEST(ImageFolder, EmptyClassFolder) {
  TempDir t;
  write_flowers(t / "flowers");
  fs::create_directories(t / "flowers/tulips");
  expect_error([&] { convert_folder({t / "flowers"}, options_for(t / "out", 1, 1)); }, {"flowers/tulips", "empty class folder"});
  EXPECT_EQ(names_except_lock(t / "out"), std::set<std::string>{});
  // Hidden files alone: empty too, and the error says what was passed over.
  write_file(t / "flowers/tulips/.DS_Store", "x");
  expect_error([&] { convert_folder({t / "flowers"}, options_for(t / "out", 1, 1)); },
               {"flowers/tulips: empty class folder (no files; 1 entry passed over", ".DS_Store: hidden"});
  fs::remove(t / "flowers/tulips/.DS_Store");
  // Only non-images inside: also an error, even with --skip-bad.
  write_file(t / "flowers/tulips/notes.txt", "x");
  ConvertOptions o = options_for(t / "out", 1, 1);
  o.skip_bad = true;
  expect_error([&] { convert_folder({t / "flowers"}, o); }, {"\"tulips\"", "no usable image"});
}

// A symbolic link in one class folder into another class's folder: the folder is walked once, with the
// class walked first. Where that is not the class whose folder holds it, its images would take the wrong
// label: an error naming the link's path and both classes (the link in a class walked after the holder
// is ignored instead, as RanksSplitTheClassFolderWalkAndKeepOneProcesssResult's crosslinked tree shows).
TEST(ImageFolder, AFolderTakenThroughALinkFromAnotherClassIsRefused) {
  TempDir t;
  write_flowers(t / "flowers");
  for (int i = 0; i < 2; ++i) write_file(t / str("flowers/tulips/t", i, ".jpg"), jpeg(20 + i, 20, 3, 30 + i));
  fs::create_directory_symlink("../tulips", t / "flowers/daisy/more");  // daisy < roses < tulips: a whole class
  expect_error([&] { convert_folder({t / "flowers"}, options_for(t / "out", 1, 1)); },
               {"flowers/daisy/more: walked as part of class folder ", "it is in class folder ", "flowers/tulips",
                "remove the link"});
  EXPECT_EQ(names_except_lock(t / "out"), std::set<std::string>{});
  fs::remove(t / "flowers/daisy/more");
  fs::create_directory_symlink("../roses/deeper", t / "flowers/daisy/deeper_roses");  // a folder inside roses
  expect_error([&] { convert_folder({t / "flowers"}, options_for(t / "out", 1, 1)); },
               {"flowers/daisy/deeper_roses: walked as part of class folder ", "flowers/roses"});
  EXPECT_EQ(names_except_lock(t / "out"), std::set<std::string>{});
}

TEST(ImageFolder, ValidationHoldOutAndTwoRoots) {
  TempDir t;
  std::map<std::string, int> files = write_flowers(t / "a");
  for (int i = 0; i < 5; ++i) write_file(t / "b/tulips/t" + std::to_string(i) + ".png", png(12, 12, 3, 200 + i));
  for (int i = 0; i < 3; ++i) write_file(t / "b/roses/x" + std::to_string(i) + ".png", png(13, 12, 3, 300 + i));
  ConvertOptions o = options_for(t / "out", 1, 2, 4);
  o.validation_fraction = 0.25;
  ConvertResult r = convert_folder({t / "a", t / "b"}, o);
  EXPECT_EQ(r.manifest.class_names, (std::vector<std::string>{"daisy", "roses", "tulips"}));
  const SplitInfo& train = *r.manifest.find_split("train");
  const SplitInfo& val = *r.manifest.find_split("validation");
  // 24 samples: 6 held out, 18 train over 2 shards (even), none lost.
  EXPECT_EQ(val.num_records, 6u);
  EXPECT_EQ(train.num_records + train.dropped.size(), 18u);
  EXPECT_FALSE(val.equal_shards);
  std::set<std::string> all;
  for (const char* split : {"train", "validation"})
    for (const Record& rec : read_split(t / "out", r.manifest, split)) EXPECT_TRUE(all.insert(rec.encoded).second);
  EXPECT_EQ(all.size() + train.dropped.size(), 24u);
  o.output = t / "out2";
  o.validation_fraction = 0;
  o.validation_count = 30;
  expect_error([&] { convert_folder({t / "a"}, o); }, {"hold-out"});
}

TEST(ImageFolder, ResizeShorterSide) {
  TempDir t;
  std::string big = jpeg(200, 120, 3, 1), small = jpeg(40, 30, 3, 2), big_png = png(90, 300, 4, 3);
  write_file(t / "in/a/big.jpg", big);
  write_file(t / "in/a/small.jpg", small);
  write_file(t / "in/b/big.png", big_png);
  ConvertResult r = convert_folder({t / "in"}, options_for(t / "out", 1, 1), 60);
  std::vector<Record> recs = read_split(t / "out", r.manifest, "train");
  ASSERT_EQ(recs.size(), 3u);
  int resized = 0;
  for (const Record& rec : recs) {
    if (rec.encoded == small) continue;  // not larger than the target: bytes untouched
    ++resized;
    EXPECT_EQ(rec.format, "jpeg");
    Image img = decode_image(rec.encoded);
    EXPECT_EQ(std::min(img.width, img.height), 60);
    EXPECT_EQ(rec.width, img.width);
    EXPECT_EQ(rec.height, img.height);
    EXPECT_EQ(rec.channels, 3);
    if (rec.label == 0) {
      EXPECT_EQ(img.width, 100);  // 200x120 → 100x60
    } else {
      EXPECT_EQ(img.height, 200);  // 90x300 → 60x200, alpha dropped
    }
  }
  EXPECT_EQ(resized, 2);
}

TEST(Resize, AreaAverage) {
  // Integer factors: exactly the block mean (rounded).
  std::vector<uint8_t> src = picture(12, 9, 3, 4), dst(4 * 3 * 3);
  std::vector<float> scratch;
  resize_area(src.data(), 12, 9, 3, dst.data(), 4, 3, &scratch);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int dy = 0; dy < 3; ++dy)
          for (int dx = 0; dx < 3; ++dx) sum += src[((y * 3 + dy) * 12 + x * 3 + dx) * 3 + c];
        EXPECT_NEAR(dst[(y * 4 + x) * 3 + c], sum / 9.0, 0.5 + 1e-3);
      }
  // Non-integer factor: a constant stays constant, the mean is kept.
  std::vector<uint8_t> flat(17 * 13, 77), out(5 * 4);
  resize_area(flat.data(), 17, 13, 1, out.data(), 5, 4, &scratch);
  for (uint8_t v : out) EXPECT_EQ(v, 77);
  int w, h;
  shorter_side_size(200, 120, 60, &w, &h);
  EXPECT_EQ(w, 100);
  EXPECT_EQ(h, 60);
  EXPECT_THROW(resize_area(flat.data(), 17, 13, 1, out.data(), 20, 4, &scratch), Error);  // upscaling
}

// Under mpirun the ranks check every size-th file and share the verdicts: the index, the skipped and
// ignored files, and so every byte written, are one process's.
TEST(ImageFolder, RanksShareTheScanAndWriteTheOneProcessBytes) {
  TempDir t;
  write_flowers(t / "flowers");
  const std::string whole = jpeg(64, 48, 3, 11);
  write_file(t / "flowers/roses/cut.jpg", whole.substr(0, whole.size() / 2));
  ConvertOptions o = options_for(t / "one", 2, 1);
  o.skip_bad = true;
  o.quiet = true;
  o.validation_count = 3;
  convert_folder({t / "flowers"}, o);
  for (int n : {2, 3}) {
    SCOPED_TRACE(str(n, " ranks"));
    ThreadRanks job(n);
    const std::string out = t / str("ranks", n);
    const auto errors = job.run([&](ThreadRanks::Rank& rank) {
      ConvertOptions mine = o;
      mine.output = out;
      mine.threads = 1;
      mine.group = &rank;
      convert_folder({t / "flowers"}, mine);
    });
    for (const auto& e : errors) ASSERT_FALSE(e);
    for (const std::string& name : visible_names(t / "one"))
      EXPECT_EQ(read_file(out + "/" + name), read_file(t / "one/" + name)) << name;
    EXPECT_EQ(visible_names(out), visible_names(t / "one"));
  }
  // Without --skip-bad the bad file fails the job, said once by rank 0 whichever rank opened it.
  ThreadRanks job(3);
  const auto errors = job.run([&](ThreadRanks::Rank& rank) {
    ConvertOptions mine = options_for(t / "bad", 1, 1);
    mine.quiet = true;
    mine.group = &rank;
    convert_folder({t / "flowers"}, mine);
  });
  ASSERT_TRUE(errors[0]);
  try {
    std::rethrow_exception(errors[0]);
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("roses/cut.jpg"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("rank"), std::string::npos) << e.what();
  }
  EXPECT_THROW(std::rethrow_exception(errors[1]), OtherRankFailed);
  EXPECT_EQ(names_except_lock(t / "bad"), std::set<std::string>{});
}

// Ranks split the walk of the class folders; where two class folders share a folder (a symbolic link
// across classes, walked once by one process), every rank walks them all: one process's bytes either way.
TEST(ImageFolder, RanksSplitTheClassFolderWalkAndKeepOneProcesssResult) {
  TempDir t;
  write_flowers(t / "flowers");
  for (int i = 0; i < 4; ++i) write_file(t / str("flowers/tulips/t", i, ".jpg"), jpeg(20 + i, 20, 3, 30 + i));
  fs::create_directories(t / "crosslinked");
  fs::copy(t / "flowers", t / "crosslinked", fs::copy_options::recursive);
  fs::create_directory_symlink("../roses/deeper", t / "crosslinked/tulips/deeper_roses");  // roses', again
  for (const char* tree : {"flowers", "crosslinked"}) {
    SCOPED_TRACE(tree);
    ConvertOptions o = options_for(t / str(tree, "-one"), 2, 1);
    o.quiet = true;
    convert_folder({t / tree}, o);
    const std::string manifest = read_file(t / str(tree, "-one/manifest.json"));
    EXPECT_EQ(manifest.find("already walked as ") != std::string::npos, std::string(tree) == "crosslinked");
    for (int n : {2, 3}) {
      ThreadRanks job(n);
      const std::string out = t / str(tree, "-", n);
      const auto errors = job.run([&](ThreadRanks::Rank& rank) {
        ConvertOptions mine = o;
        mine.output = out;
        mine.threads = 1;
        mine.group = &rank;
        convert_folder({t / tree}, mine);
      });
      for (const auto& e : errors) ASSERT_FALSE(e);
      EXPECT_EQ(visible_names(out), visible_names(t / str(tree, "-one")));
      for (const std::string& name : visible_names(t / str(tree, "-one")))
        EXPECT_EQ(read_file(out + "/" + name), read_file(t / str(tree, "-one/") + name)) << n << " ranks: " << name;
    }
  }
}

}  // namespace
}  // namespace fastnn::converters
