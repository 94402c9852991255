// Image-folder class maps and layouts: a tree of split folders becomes one output with its splits and
// one class map (labels by name across splits), a tree mixing split and class folders is refused
// naming both, pinned class names keep every id (a split converted alone, a folder not in the map),
// ignored files are named with their reason, the validation hold-out is stratified by class, and
// missing classes and a missing held-out split are warned about.
#include <gtest/gtest.h>

#include <map>

#include "convert_test_util.h"
#include "converters/folder_layout.h"
#include "converters/image_folder.h"

namespace fastnn::converters {
namespace {

using namespace testing;

// A small PNG whose pixels depend on `seed`, so every file's bytes differ.
std::string png(uint32_t seed) {
  std::vector<uint8_t> px(8 * 6 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return encode_png(px.data(), 8, 6, 3);
}

// root/<split>/<class>/<i>.png for every (split, class, count).
void tree(const std::string& root, const std::vector<std::tuple<std::string, std::string, int>>& spec) {
  uint32_t seed = 1;
  for (const auto& [split, cls, n] : spec)
    for (int i = 0; i < n; ++i)
      write_file(root + "/" + (split.empty() ? "" : split + "/") + cls + "/" + std::to_string(i) + ".png", png(seed++));
}

ConvertResult convert(const ImageFolderOptions& fo, const ConvertOptions& o) {
  ImageFolderSource src(fo);
  return run_conversion(src, o);
}

ImageFolderOptions folder(const std::vector<std::string>& roots) {
  ImageFolderOptions fo;
  fo.roots = roots;
  return fo;
}

// label → count over a split's records.
std::map<int64_t, int> labels_of(const std::string& dir, const Manifest& m, const std::string& split) {
  std::map<int64_t, int> n;
  for (const Record& r : read_split(dir, m, split)) ++n[r.label];
  return n;
}

TEST(FolderLayout, SplitNames) {
  EXPECT_EQ(split_of_folder("train"), "train");
  EXPECT_EQ(split_of_folder("Val"), "validation");
  EXPECT_EQ(split_of_folder("validation"), "validation");
  EXPECT_EQ(split_of_folder("TEST"), "test");
  EXPECT_EQ(split_of_folder("daisy"), "");
  EXPECT_EQ(split_of_folder("training"), "");
  EXPECT_THROW(parse_folder_layout("tree"), ConfigError);
}

TEST(ImageFolderClasses, SplitTreeIsOneOutputWithOneClassMap) {
  TempDir t;
  // val lacks "tulips"; test holds only "roses": ids still follow the union of all splits' folders.
  tree(t / "photos", {{"train", "daisy", 4}, {"train", "roses", 4}, {"train", "tulips", 4},
                      {"val", "daisy", 2}, {"val", "roses", 2}, {"test", "roses", 3}});
  write_file(t / "photos/README.txt", "about");
  write_file(t / "photos/val/roses/x.webp", std::string("RIFF\x10\0\0\0WEBPVP8 ", 16));
  ConvertResult r = convert(folder({t / "photos"}), options_for(t / "out", 1, 2));
  const Manifest& m = r.manifest;
  EXPECT_EQ(m.class_names, (std::vector<std::string>{"daisy", "roses", "tulips"}));
  ASSERT_EQ(m.splits.size(), 3u);
  EXPECT_EQ(m.splits[0].name, "train");
  EXPECT_EQ(m.splits[1].name, "validation");
  EXPECT_EQ(m.splits[2].name, "test");
  EXPECT_TRUE(m.splits[0].equal_shards);
  EXPECT_FALSE(m.splits[1].equal_shards);
  EXPECT_EQ(labels_of(t / "out", m, "train"), (std::map<int64_t, int>{{0, 4}, {1, 4}, {2, 4}}));
  EXPECT_EQ(labels_of(t / "out", m, "validation"), (std::map<int64_t, int>{{0, 2}, {1, 2}}));
  EXPECT_EQ(labels_of(t / "out", m, "test"), (std::map<int64_t, int>{{1, 3}}));
  // Ignored files are named with why: the top-level file in train's list, the WebP in validation's.
  ASSERT_EQ(m.splits[0].ignored.size(), 1u);
  EXPECT_EQ(m.splits[0].ignored[0].source, t / "photos/README.txt");
  ASSERT_EQ(m.splits[1].ignored.size(), 1u);
  EXPECT_EQ(m.splits[1].ignored[0].source, t / "photos/val/roses/x.webp");
  EXPECT_EQ(m.splits[1].ignored[0].reason, "a WebP image: only JPEG and PNG are converted");
  EXPECT_EQ(m.splits[1].ignored_files, 1u);
  EXPECT_EQ(r.ignored.size(), 2u);
  // The splits lacking classes are said.
  std::string warnings;
  for (const std::string& w : r.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("split validation has no record of 1 of the 3 classes: 2 \"tulips\""), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("split test has no record of 2 of the 3 classes"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("no held-out split"), std::string::npos) << warnings;
}

TEST(ImageFolderClasses, MixedTreeIsRefusedNamingBothKinds) {
  TempDir t;
  tree(t / "photos", {{"train", "daisy", 2}, {"", "roses", 2}, {"", "val", 2}});
  expect_error([&] { convert(folder({t / "photos"}), options_for(t / "out", 1, 1)); },
               {"photos: holds split folders (train, val) and other folders (roses)", "--layout classes"});
  EXPECT_EQ(names_except_lock(t / "out"), std::set<std::string>{});
  // Told that they are classes, the split-named folders are classes.
  ImageFolderOptions fo = folder({t / "photos"});
  fo.layout = FolderLayout::kClasses;
  ConvertResult r = convert(fo, options_for(t / "out", 1, 1));
  EXPECT_EQ(r.manifest.class_names, (std::vector<std::string>{"roses", "train", "val"}));
  // --split names a class tree's split only.
  TempDir u;
  tree(u / "photos", {{"train", "daisy", 2}, {"val", "daisy", 1}});
  fo = folder({u / "photos"});
  fo.split = "validation";
  expect_error([&] { convert(fo, options_for(u / "out", 1, 1)); }, {"--split validation", "split folders (train, val)"});
}

TEST(ImageFolderClasses, PinnedClassNamesKeepEveryId) {
  TempDir t;
  tree(t / "val", {{"", "daisy", 2}, {"", "tulips", 3}});
  ImageFolderOptions fo = folder({t / "val"});
  fo.split = "validation";
  fo.class_names = {"daisy", "roses", "tulips"};
  fo.class_names_source = "--labels-from train";
  ConvertResult r = convert(fo, options_for(t / "out", 1, 1));
  EXPECT_EQ(r.manifest.class_names, fo.class_names);
  EXPECT_EQ(r.manifest.class_names_source, "--labels-from train");
  EXPECT_EQ(labels_of(t / "out", r.manifest, "validation"), (std::map<int64_t, int>{{0, 2}, {2, 3}}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("1 \"roses\""), std::string::npos) << r.warnings[0];
  // A folder the map does not name is an error naming it and the map.
  tree(t / "val", {{"", "lilies", 1}});
  expect_error([&] { convert(fo, options_for(t / "out2", 1, 1)); },
               {"val/lilies: class folder \"lilies\" is not in the class map of --labels-from train", "3 classes"});
  // A map naming a class twice is refused.
  fo.class_names = {"daisy", "daisy", "lilies", "tulips"};
  expect_error([&] { convert(fo, options_for(t / "out3", 1, 1)); }, {"\"daisy\" is named twice"});
}

TEST(ImageFolderClasses, HoldOutIsStratifiedByDefault) {
  TempDir t;
  tree(t / "photos", {{"", "a", 40}, {"", "b", 10}});
  ConvertOptions o = options_for(t / "out", 1, 1);
  o.validation_fraction = 0.2;
  ConvertResult r = convert(folder({t / "photos"}), o);
  EXPECT_EQ(labels_of(t / "out", r.manifest, "validation"), (std::map<int64_t, int>{{0, 8}, {1, 2}}));
  std::set<std::string> stratified;
  for (const Record& rec : read_split(t / "out", r.manifest, "validation")) stratified.insert(rec.encoded);
  // Asked for, a uniformly random hold-out: as many samples, another draw.
  o.output = t / "random";
  o.random_holdout = true;
  r = convert(folder({t / "photos"}), o);
  std::set<std::string> random;
  for (const Record& rec : read_split(t / "random", r.manifest, "validation")) random.insert(rec.encoded);
  EXPECT_EQ(random.size(), 10u);
  EXPECT_NE(random, stratified);
}

TEST(ImageFolderClasses, NoHeldOutSplitIsSaid) {
  TempDir t;
  tree(t / "photos", {{"", "a", 3}, {"", "b", 3}});
  ConvertOptions o = options_for(t / "out", 1, 1);
  o.holdout_hint = "use --validation-fraction";
  ConvertResult r = convert(folder({t / "photos"}), o);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "no held-out split: every sample is in train, so training will report no held-out "
                           "accuracy; use --validation-fraction");
}

TEST(ImageFolderClasses, ImbalanceIsWarnedWithNumbers) {
  TempDir t;
  tree(t / "photos", {{"", "daisy", 47}, {"", "roses", 1}});
  ConvertOptions o = options_for(t / "out", 1, 1);
  o.validation_count = 2;
  ConvertResult r = convert(folder({t / "photos"}), o);
  std::string warnings;
  for (const std::string& w : r.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("split train: class 0 \"daisy\" has 45 records, class 1 \"roses\" 1: 45.0 times as many"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("split validation has no record of 1 of the 2 classes: 1 \"roses\""), std::string::npos)
      << warnings;
}

}  // namespace
}  // namespace fastnn::converters
