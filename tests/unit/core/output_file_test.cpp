// core/output_file.h: an output replaces a regular file only when complete; a FIFO, a device, a folder or
// one of the command's inputs is refused before anything is written and left exactly as it was; a
// symbolic link keeps pointing at the file it names; a failed write (a full disk: /dev/full) is an
// error naming the output and errno, and leaves nothing behind.
#include "core/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_output_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Nothing but `names` in the folder (no temporary left behind).
  void expect_only(std::initializer_list<std::string> names) {
    std::vector<std::string> got;
    for (const auto& e : fs::directory_iterator(dir_)) got.push_back(e.path().filename().string());
    std::sort(got.begin(), got.end());
    std::vector<std::string> want(names);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want);
  }
  template <typename F>
  static std::string error_of(F f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(OutputFileTest, ReplacesARegularFileOnlyWhenCommitted) {
  const fs::path p = dir_ / "out.jsonl";
  spit(p, "old");
  ::chmod(p.c_str(), 0640);
  {
    OutputFile f(p.string());
    f.write("new contents");
    EXPECT_EQ(slurp(p), "old");  // not yet
    f.commit();
  }
  EXPECT_EQ(slurp(p), "new contents");
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // the replaced file's permissions are kept
  {
    OutputFile f(p.string());
    f.write("abandoned");
  }  // an exception on the way: no commit
  EXPECT_EQ(slurp(p), "new contents");
  expect_only({"out.jsonl"});
}

TEST_F(OutputFileTest, RefusesAFifoAndLeavesIt) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string e = error_of([&] { OutputFile f(fifo.string()); });
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;
  EXPECT_NE(e.find(fifo.string()), std::string::npos) << e;
  EXPECT_TRUE(fs::is_fifo(fifo));
  expect_only({"pipe"});
}

TEST_F(OutputFileTest, RefusesADeviceAndAFolder) {
  const std::string dev = error_of([&] { OutputFile f("/dev/null"); });
  EXPECT_NE(dev.find("character device"), std::string::npos) << dev;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  const std::string folder = error_of([&] { OutputFile f(dir_.string()); });
  EXPECT_NE(folder.find("folder"), std::string::npos) << folder;
  EXPECT_NE(error_of([&] { checked_output_target((dir_ / "x/").string()); }).find("folder"), std::string::npos);
}

TEST_F(OutputFileTest, RefusesAnInputUnderAnyName) {
  const fs::path input = dir_ / "image.png";
  spit(input, "png bytes");
  const fs::path other_name = dir_ / "hard_link.png";
  fs::create_hard_link(input, other_name);
  const std::vector<std::string> inputs = {(dir_ / "missing").string(), input.string()};
  for (const fs::path& target : {input, other_name, dir_ / "." / "image.png"}) {
    const std::string e = error_of([&] { OutputFile f(target.string(), {.inputs = inputs}); });
    EXPECT_NE(e.find("one of this command's inputs"), std::string::npos) << target << ": " << e;
  }
  EXPECT_EQ(slurp(input), "png bytes");
  // The check runs again at commit: an output that became an input's name meanwhile is refused too.
  const fs::path out = dir_ / "out.txt";
  OutputFile f(out.string(), {.inputs = inputs});
  f.write("x");
  fs::create_hard_link(input, out);
  EXPECT_THROW(f.commit(), ConfigError);
  EXPECT_EQ(slurp(input), "png bytes");
}

TEST_F(OutputFileTest, FollowsASymbolicLinkAndKeepsIt) {
  const fs::path real = dir_ / "real.txt", link = dir_ / "link.txt";
  spit(real, "old");
  fs::create_symlink(real, link);
  OutputFile f(link.string());
  f.write("through the link");
  f.commit();
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "through the link");
  fs::create_symlink(dir_ / "nothing", dir_ / "dangling");
  EXPECT_NE(error_of([&] { OutputFile g((dir_ / "dangling").string()); }).find("symbolic link to nothing"), std::string::npos);
}

TEST_F(OutputFileTest, AFailedWriteNamesTheOutputAndErrno) {
  // /dev/full: every write fails with ENOSPC, as on a full disk. The temporary must go, the error must say why.
  const fs::path p = dir_ / "out.bin";
  OutputFile f(p.string(), {.sync = false});
  ASSERT_NE(::dup2(::open("/dev/full", O_WRONLY), fileno(f.get())), -1);
  // The write fails where the buffer is flushed: in write() for a large one, else in commit().
  const std::string e = error_of([&] {
    f.write(std::string(1 << 16, 'x'));
    f.commit();
  });
  EXPECT_NE(e.find(p.string()), std::string::npos) << e;
  EXPECT_NE(e.find("No space left on device"), std::string::npos) << e;
  expect_only({});
}

}  // namespace
}  // namespace fastnn
