// core/class_map: the first difference of two class maps named with both origins, the refusal, and
// a dataset folder's map read from manifest.json (checked against labels.txt) or labels.txt alone.
#include "core/class_map.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/manifest.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

ClassMap map(std::vector<std::string> names, std::string origin) { return {std::move(names), std::move(origin)}; }

TEST(ClassMapDifference, EqualMapsHaveNone) {
  EXPECT_EQ(class_map_difference(map({"a", "b"}, "A"), map({"a", "b"}, "B")), "");
  EXPECT_EQ(class_map_difference(map({}, "A"), map({}, "B")), "");
}

TEST(ClassMapDifference, NamesTheFirstDifferingClassAndBothOrigins) {
  EXPECT_EQ(class_map_difference(map({"daisy", "roses", "tulips"}, "train/manifest.json"),
                                 map({"daisy", "tulips", "roses"}, "val/manifest.json")),
            "class 1 is \"roses\" in train/manifest.json but \"tulips\" in val/manifest.json");
  // A class missing in the middle shifts every later id: the first shifted one is named, and the counts.
  EXPECT_EQ(class_map_difference(map({"daisy", "roses", "tulips"}, "ckpt"), map({"daisy", "tulips"}, "val")),
            "class 1 is \"roses\" in ckpt but \"tulips\" in val (and ckpt has 3 classes, val 2)");
}

TEST(ClassMapDifference, ALongerMapNamesItsFirstExtraClass) {
  EXPECT_EQ(class_map_difference(map({"0", "1"}, "A"), map({"0", "1", "2"}, "B")),
            "A has 2 classes, B has 3: class 2 (\"2\") is only in B");
  EXPECT_EQ(class_map_difference(map({"x"}, "A"), map({}, "B")), "A has 1 classes, B has 0: class 0 (\"x\") is only in A");
}

TEST(ClassMapDifference, ControlBytesStayVisible) {
  const std::string d = class_map_difference(map({"cat"}, "A"), map({std::string("cat\n")}, "B"));
  EXPECT_NE(d.find("\"cat\\x0A\""), std::string::npos) << d;
}

TEST(RequireSameClasses, ThrowsConfigErrorNamingWhat) {
  EXPECT_NO_THROW(require_same_classes(map({"a"}, "A"), map({"a"}, "B"), "eval"));
  try {
    require_same_classes(map({"a", "b"}, "A"), map({"b", "a"}, "B"), "eval_files");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "eval_files: the class maps differ: class 0 is \"a\" in A but \"b\" in B");
  }
}

TEST(WithoutFirstClasses, DropsTheBackgroundClass) {
  const auto m = without_first_classes(map({"background", "daisy", "roses"}, "L"), 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->names, (std::vector<std::string>{"daisy", "roses"}));
  EXPECT_NE(m->origin.find("labels_offset"), std::string::npos);
  EXPECT_EQ(without_first_classes(map({"a"}, "L"), 0)->origin, "L");
  EXPECT_FALSE(without_first_classes(map({"a"}, "L"), 1).has_value());
}

class FolderClassMap : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_class_map_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  void write_manifest(const std::vector<std::string>& names) {
    Manifest m;
    m.dataset = "image-folder";
    m.class_names = names;
    SplitInfo s;
    s.name = "train";
    s.equal_shards = true;
    s.shards = {{"train-00000-of-00001.tfrecord", 1, 10, std::vector<uint64_t>(names.size(), 0)}};
    s.shards[0].label_histogram[0] = 1;
    s.label_histogram = s.shards[0].label_histogram;
    s.num_records = s.num_source_samples = 1;
    m.splits = {s};
    write(kManifestFileName, serialize_manifest(m));
  }
  std::string d() const { return dir_.string(); }
  fs::path dir_;
};

TEST_F(FolderClassMap, NoneWithoutManifestOrLabels) { EXPECT_FALSE(read_folder_class_map(d()).has_value()); }

TEST_F(FolderClassMap, LabelsTxtAlone) {
  write(kLabelsFileName, "0:daisy\n1:roses\n");
  const auto m = read_folder_class_map(d());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->names, (std::vector<std::string>{"daisy", "roses"}));
  EXPECT_EQ(m->origin, d() + "/labels.txt");
}

TEST_F(FolderClassMap, ManifestFirstAndLabelsTxtMustAgree) {
  write_manifest({"daisy", "roses"});
  auto m = read_folder_class_map(d());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->origin, d() + "/manifest.json");
  write(kLabelsFileName, "0:daisy\n1:roses\n");
  EXPECT_EQ(read_folder_class_map(d())->names, (std::vector<std::string>{"daisy", "roses"}));
  write(kLabelsFileName, "0:daisy\n1:tulips\n");
  try {
    read_folder_class_map(d());
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.json and labels.txt disagree (class 1 is \"roses\""), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fastnn
