// core/dataset_files: FastNN's %s file_pattern, glob expansion, split names from TF-slim / FastNN
// shard names, and labels.txt found in a dataset folder (missing, duplicate ids, gaps, non-UTF-8).
#include "core/dataset_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

class DatasetFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_dataset_files_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& name, const std::string& text = "x") { std::ofstream(dir_ / name) << text; }
  std::string d() const { return dir_.string(); }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST(SubstituteSplit, FastNNPercentS) {
  EXPECT_EQ(substitute_split("flowers_%s_*.tfrecord", "train"), "flowers_train_*.tfrecord");
  EXPECT_EQ(substitute_split("cifar10_%s.tfrecord", "test"), "cifar10_test.tfrecord");
  EXPECT_EQ(substitute_split("100%%_%s", "validation"), "100%_validation");
  EXPECT_THROW(substitute_split("flowers_*.tfrecord", "train"), ConfigError);  // no %s
  EXPECT_THROW(substitute_split("%s_%s", "train"), ConfigError);               // two
  EXPECT_THROW(substitute_split("%d_%s", "train"), ConfigError);               // other conversion
  EXPECT_THROW(substitute_split("a_%s_%", "train"), ConfigError);              // dangling %
  try {
    substitute_split("flowers.tfrecord", "train");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("exactly one %s"), std::string::npos) << e.what();
  }
}

TEST_F(DatasetFilesTest, GlobsSortedAndFiltered) {
  for (const char* n : {"flowers_train_00001-of-00002.tfrecord", "flowers_train_00000-of-00002.tfrecord",
                        "flowers_validation_00000-of-00001.tfrecord", ".flowers_train_hidden.tfrecord", "labels.txt",
                        "manifest.json"})
    touch(n);
  fs::create_directories(dir_ / "flowers_train_folder.tfrecord");  // a folder never matches
  EXPECT_EQ(match_files("flowers_train_*.tfrecord", d()),
            (std::vector<std::string>{p("flowers_train_00000-of-00002.tfrecord"),
                                      p("flowers_train_00001-of-00002.tfrecord")}));
  EXPECT_EQ(match_files("*", d()).size(), 3u);  // no hidden file, no labels.txt / manifest.json, no folder
  EXPECT_EQ(match_files(".flowers*", d()).size(), 1u);
  EXPECT_EQ(match_files(p("flowers_validation_0000[0-9]-of-*"), ""),
            (std::vector<std::string>{p("flowers_validation_00000-of-00001.tfrecord")}));
  EXPECT_TRUE(match_files("flowers_test_*", d()).empty());
  // A plain name matches itself when it exists (labels.txt too: only wildcards skip it).
  EXPECT_EQ(match_files("labels.txt", d()), (std::vector<std::string>{p("labels.txt")}));
  EXPECT_TRUE(match_files("missing.tfrecord", d()).empty());
  EXPECT_THROW(match_files("*/x.tfrecord", d()), ConfigError);  // wildcard in a folder part
  EXPECT_THROW(match_files("", d()), ConfigError);
}

TEST_F(DatasetFilesTest, ExpandKeepsPatternOrderAndDropsDuplicates) {
  touch("a_train.tfrecord");
  touch("b_train.tfrecord");
  touch("c_test.tfrecord");
  EXPECT_EQ(expand_patterns({"c_test.tfrecord", "*_train.tfrecord", "a_train.tfrecord"}, d(), "--input"),
            (std::vector<std::string>{p("c_test.tfrecord"), p("a_train.tfrecord"), p("b_train.tfrecord")}));
  try {
    expand_patterns({"*_validation.tfrecord"}, d(), "--input");
    FAIL();
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--input: *_validation.tfrecord matches no file in " + d()), std::string::npos) << m;
  }
  EXPECT_THROW(expand_patterns({"nope.tfrecord"}, d(), "--input"), ConfigError);
}

TEST(SplitOfFileName, TFSlimAndFastNNNames) {
  EXPECT_EQ(split_of_file_name("flowers_train_00000-of-00005.tfrecord"), "train");
  EXPECT_EQ(split_of_file_name("flowers_validation_00004-of-00005.tfrecord"), "validation");
  EXPECT_EQ(split_of_file_name("cifar10_test.tfrecord"), "test");
  EXPECT_EQ(split_of_file_name("validation-00003-of-00128"), "validation");
  EXPECT_EQ(split_of_file_name("train-00000-of-00004.tfrecord"), "train");
  EXPECT_EQ(split_of_file_name("mnist_VAL.tfrecord"), "validation");
  EXPECT_EQ(split_of_file_name("trainer_data.tfrecord"), "");  // a token, not a prefix
  EXPECT_EQ(split_of_file_name("shard-00000.tfrecord"), "");
}

TEST_F(DatasetFilesTest, LabelsTxtMissingIsNotAnError) { EXPECT_FALSE(read_labels_in(d()).has_value()); }

TEST_F(DatasetFilesTest, LabelsTxtTFSlimLines) {
  touch("labels.txt", "0:daisy\n1:dandelion\n2:roses\n3:sunflowers\n4:tulips\n");
  auto names = read_labels_in(d());
  ASSERT_TRUE(names.has_value());
  EXPECT_EQ(*names, (std::vector<std::string>{"daisy", "dandelion", "roses", "sunflowers", "tulips"}));
}

TEST_F(DatasetFilesTest, LabelsTxtHostile) {
  auto error_of = [&](const std::string& text) {
    touch("labels.txt", text);
    try {
      read_labels_in(d());
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Duplicate id: the line and the id named.
  std::string e = error_of("0:daisy\n1:roses\n1:tulips\n");
  EXPECT_NE(e.find("labels.txt:3: id 1 appears twice"), std::string::npos) << e;
  // A gap (no id 1): the class count would be a guess, so it is an error naming the line.
  e = error_of("0:daisy\n2:roses\n");
  EXPECT_NE(e.find("labels.txt:2: id 2 outside 0..1"), std::string::npos) << e;
  // Empty file, and one of blank lines only.
  EXPECT_NE(error_of("").find("no class names"), std::string::npos);
  EXPECT_NE(error_of("\n \n\t\n").find("no class names"), std::string::npos);
  // Not UTF-8: names are bytes, kept as they are.
  touch("labels.txt", std::string("0:caf\xe9\n1:\xff\xfe\n"));
  auto names = read_labels_in(d());
  ASSERT_TRUE(names.has_value());
  EXPECT_EQ(*names, (std::vector<std::string>{"caf\xe9", "\xff\xfe"}));
  // A folder or a FIFO named labels.txt is refused, never read (or blocked on).
  fs::remove(dir_ / "labels.txt");
  ASSERT_EQ(::mkfifo((dir_ / "labels.txt").c_str(), 0600), 0);
  EXPECT_THROW(read_labels_in(d()), IoError);
}

}  // namespace
}  // namespace fastnn
