// core/folder_walk.h: sorted depth-first walks; linked folders followed, each folder once (a loop ends);
// hidden and unwanted entries reported with their reason; an image-named FIFO or dangling link kept as a
// bad file instead of being left out in silence.
#include "core/folder_walk.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

class FolderWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_folder_walk_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "b/deep");
    fs::create_directories(dir_ / "a");
    for (const char* f : {"a/2.png", "a/1.jpg", "b/deep/3.png", "b/notes.txt", ".hidden.png"}) std::ofstream(dir_ / f) << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }
  static bool image(const std::string& n) { return n.ends_with(".png") || n.ends_with(".jpg"); }
  std::string rel(const std::string& p) const { return p.substr(dir_.string().size() + 1); }
  fs::path dir_;
};

TEST_F(FolderWalkTest, SortedDepthFirstWithIgnoredEntriesNamed) {
  FolderWalk w;
  FolderWalker(image, "not an image").walk(dir_.string(), &w);
  std::vector<std::string> files;
  for (const WalkedFile& f : w.files) {
    files.push_back(rel(f.path));
    EXPECT_TRUE(f.problem.empty());
  }
  EXPECT_EQ(files, (std::vector<std::string>{"a/1.jpg", "a/2.png", "b/deep/3.png"}));
  ASSERT_EQ(w.ignored.size(), 2u);
  EXPECT_EQ(rel(w.ignored[0].path), ".hidden.png");
  EXPECT_EQ(w.ignored[0].reason, "hidden");
  EXPECT_EQ(rel(w.ignored[1].path), "b/notes.txt");
  EXPECT_EQ(w.ignored[1].reason, "not an image");
}

TEST_F(FolderWalkTest, ARootGivenWithATrailingSlashGivesPlainPaths) {
  FolderWalk w;
  FolderWalker(image, "not an image").walk(dir_.string() + "/", &w);
  ASSERT_EQ(w.files.size(), 3u);
  EXPECT_EQ(w.files[0].path, (dir_ / "a/1.jpg").string());  // not ".../fastnn_folder_walk_N//a/1.jpg"
  EXPECT_EQ(w.ignored[0].path, (dir_ / ".hidden.png").string());
}

TEST_F(FolderWalkTest, LinkedFoldersAreWalkedOnceAndLoopsEnd) {
  fs::create_directory_symlink(dir_ / "b", dir_ / "c_link_to_b");
  fs::create_directory_symlink(dir_, dir_ / "a/loop_to_root");
  FolderWalk w;
  FolderWalker(image, "not an image").walk(dir_.string(), &w);
  std::vector<std::string> files;
  for (const WalkedFile& f : w.files) files.push_back(rel(f.path));
  EXPECT_EQ(files, (std::vector<std::string>{"a/1.jpg", "a/2.png", "b/deep/3.png"}));  // nothing twice
  int already = 0;
  for (const IgnoredEntry& e : w.ignored) already += e.reason.find("already walked") != std::string::npos;
  EXPECT_EQ(already, 2);  // a/loop_to_root and c_link_to_b
  // Walked alone, the linked folder is a folder like any other.
  FolderWalk alone;
  FolderWalker(image, "not an image").walk((dir_ / "c_link_to_b").string(), &alone);
  ASSERT_EQ(alone.files.size(), 1u);
}

TEST_F(FolderWalkTest, ImageNamedEntriesThatAreNotFilesAreKeptAsBad) {
  ASSERT_EQ(::mkfifo((dir_ / "a/0.png").c_str(), 0600), 0);
  fs::create_symlink(dir_ / "nowhere.jpg", dir_ / "a/9.jpg");
  ASSERT_EQ(::mkfifo((dir_ / "a/pipe.txt").c_str(), 0600), 0);
  FolderWalk w;
  FolderWalker(image, "not an image").walk(dir_.string(), &w);
  ASSERT_GE(w.files.size(), 2u);
  EXPECT_EQ(rel(w.files[0].path), "a/0.png");
  EXPECT_NE(w.files[0].problem.find("FIFO"), std::string::npos) << w.files[0].problem;
  EXPECT_EQ(rel(w.files[3].path), "a/9.jpg");
  EXPECT_NE(w.files[3].problem.find("dangling"), std::string::npos) << w.files[3].problem;
  bool pipe_ignored = false;
  for (const IgnoredEntry& e : w.ignored) pipe_ignored |= rel(e.path) == "a/pipe.txt" && e.reason.find("FIFO") != std::string::npos;
  EXPECT_TRUE(pipe_ignored);
}

TEST_F(FolderWalkTest, ARootThatIsNotAFolderIsRefused) {
  FolderWalk w;
  EXPECT_THROW(FolderWalker(image, "").walk((dir_ / "a/1.jpg").string(), &w), IoError);
  EXPECT_THROW(FolderWalker(image, "").walk((dir_ / "missing").string(), &w), IoError);
}

}  // namespace
}  // namespace fastnn
