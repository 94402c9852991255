// core/line_reader.h: lines as written ("\n" and "\r\n", a last line without '\n' marked torn), across
// buffer refills; a line over the limit is an error naming file and line; a FIFO is refused at once.
#include "core/line_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

class LineReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_line_reader_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string p = (dir_ / "f.txt").string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

TEST_F(LineReaderTest, ReadsEveryLineAsWritten) {
  // Lines longer than the reader's 64 KiB chunk, and endings that fall on a chunk's edge.
  std::vector<std::string> want = {"a", "", "b\tc", std::string(70000, 'x'), std::string(65535, 'y'), "last"};
  std::string text;
  for (size_t i = 0; i < want.size(); ++i) text += want[i] + (i == 2 ? "\r\n" : "\n");
  LineReader r(write(text), 1 << 20);
  std::string line;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(r.next(&line)) << i;
    EXPECT_EQ(line, want[i]) << i;
    EXPECT_EQ(r.line_number(), static_cast<int64_t>(i + 1));
    EXPECT_TRUE(r.ended());
  }
  EXPECT_FALSE(r.next(&line));
}

TEST_F(LineReaderTest, ALastLineWithoutNewlineIsReturnedAsTorn) {
  LineReader r(write("one\ntwo"), 100);
  std::string line;
  ASSERT_TRUE(r.next(&line));
  EXPECT_TRUE(r.ended());
  ASSERT_TRUE(r.next(&line));
  EXPECT_EQ(line, "two");
  EXPECT_FALSE(r.ended());
  EXPECT_FALSE(r.next(&line));
  LineReader empty(write(""), 100);
  EXPECT_FALSE(empty.next(&line));
}

TEST_F(LineReaderTest, ALongLineIsAnErrorNamingFileAndLine) {
  const std::string p = write("ok\n" + std::string(200000, 'z') + "\n");
  LineReader r(p, 1000);
  std::string line;
  ASSERT_TRUE(r.next(&line));
  try {
    r.next(&line);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(p + ":2: line longer than 1000"), std::string::npos) << e.what();
  }
}

TEST_F(LineReaderTest, AFifoIsRefusedWithoutWaiting) {
  const std::string fifo = (dir_ / "list.tsv").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(LineReader(fifo, 100), IoError);
}

}  // namespace
}  // namespace fastnn
