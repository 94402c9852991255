// core/input_file.h: only regular files are opened; FIFOs, folders and devices are refused at once
// (a FIFO with no writer would block open(2) forever), naming the path; sizes are checked first.
#include "core/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/compression.h"
#include "core/manifest.h"
#include "core/tfrecord.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_input_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fifo_ = (dir_ / "shard.fifo").string();
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs f, which must throw IoError naming the path and the kind.
  template <typename F>
  void expect_refused(F f, const std::string& path, const std::string& kind) {
    try {
      f();
      FAIL() << "no error for " << path;
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(kind), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
  std::string fifo_;
};

TEST_F(InputFileTest, FifoIsRefusedWithoutWaiting) {
  // Without a writer a blocking open of the FIFO never returns: the test would hang, not fail.
  expect_refused([&] { InputFile f(fifo_); }, fifo_, "FIFO");
  expect_refused([&] { read_regular_file(fifo_, 100); }, fifo_, "FIFO");
  expect_refused([&] { TFRecordReader r(fifo_); }, fifo_, "FIFO");
  expect_refused([&] { detect_compression(fifo_); }, fifo_, "FIFO");
}

TEST_F(InputFileTest, FolderAndDeviceAreRefused) {
  const std::string d = dir_.string();
  expect_refused([&] { InputFile f(d); }, d, "folder");
  expect_refused([&] { TFRecordReader r(d); }, d, "folder");
  expect_refused([&] { InputFile f("/dev/null"); }, "/dev/null", "character device");
}

TEST_F(InputFileTest, ManifestInPlaceOfFifoIsRefused) {
  const std::string m = (dir_ / "sub").string();
  fs::create_directories(m);
  ASSERT_EQ(::mkfifo((m + "/manifest.json").c_str(), 0600), 0);
  expect_refused([&] { read_manifest(m); }, m + "/manifest.json", "FIFO");
}

TEST_F(InputFileTest, RegularFileSizeCheckedBeforeReading) {
  const std::string p = (dir_ / "f.txt").string();
  std::ofstream(p) << "0123456789";
  InputFile f(p);
  EXPECT_EQ(f.size(), 10u);
  EXPECT_GE(f.fd(), 0);
  EXPECT_EQ(read_regular_file(p, 10), "0123456789");
  EXPECT_THROW(read_regular_file(p, 9), FormatError);
  // A symlink to a regular file is followed.
  fs::create_symlink(p, dir_ / "link.txt");
  EXPECT_EQ(read_regular_file((dir_ / "link.txt").string(), 100), "0123456789");
  EXPECT_THROW(InputFile((dir_ / "missing").string()), IoError);
}

}  // namespace
}  // namespace fastnn
