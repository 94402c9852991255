// core/atomic_output: files appear together on commit, never on failure; leftovers of killed runs are
// cleaned; finished outputs are protected; one writer per directory.
#include "core/atomic_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/check.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fastnn_atomic_XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

std::set<std::string> names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

OutputDir::Options options(bool overwrite = false) {
  OutputDir::Options o;
  o.marker = "manifest.json";
  o.owned = [](const std::string& n) { return n.size() > 6 && n.substr(0, 6) == "shard-"; };
  o.overwrite = overwrite;
  return o;
}

TEST(OutputDir, CommitRenamesEverythingMarkerLast) {
  TempDir t;
  std::string dir = (t.path / "a/b/out").string();  // parents are created
  {
    OutputDir out(dir, options());
    write(out.temp_path("shard-0"), "zero");
    write(out.temp_path("shard-1"), "one");
    write(out.temp_path("manifest.json"), "{}");
    EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock", ".fastnn-incomplete", ".shard-0.fastnn-tmp",
                                                 ".shard-1.fastnn-tmp", ".manifest.json.fastnn-tmp"}));
    out.commit();
  }
  EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock", "shard-0", "shard-1", "manifest.json"}));
}

TEST(OutputDir, FailureLeavesNothing) {
  TempDir t;
  std::string dir = (t.path / "out").string();
  {
    OutputDir out(dir, options());
    write(out.temp_path("shard-0"), "zero");
    write(out.temp_path("manifest.json"), "{}");
    // destroyed without commit, as after an exception
  }
  EXPECT_FALSE(fs::exists(dir));  // it created the folder, so it removed it again
  // A folder that existed before keeps existing (with the lock file), holding no output.
  fs::create_directories(dir);
  {
    OutputDir out(dir, options());
    write(out.temp_path("shard-0"), "zero");
  }
  EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock"}));
}

TEST(OutputDir, CleansLeftoversOfAKilledRun) {
  TempDir t;
  std::string dir = t.path.string();
  write(dir + "/.shard-0.fastnn-tmp", "partial");    // a killed run's temporary
  write(dir + "/shard-7", "from an interrupted commit");  // owned, no marker: incomplete
  write(dir + "/notes.txt", "user file");              // not ours: kept
  write(dir + "/.fastnn-incomplete", "");              // the killed run's ownership file
  OutputDir out(dir, options());
  EXPECT_EQ(out.cleaned_up().size(), 2u);
  EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock", ".fastnn-incomplete", "notes.txt"}));
}

// Output-named files with no marker and no ownership file were not provably written by fastnn:
// refused naming them and kept; --overwrite replaces them at commit.
TEST(OutputDir, FilesItCannotProveItWroteAreKept) {
  TempDir t;
  std::string dir = t.path.string();
  write(dir + "/shard-3", "someone else's");
  try {
    OutputDir out(dir, options());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("shard-3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock", "shard-3"}));
  {
    OutputDir out(dir, options(/*overwrite=*/true));
    EXPECT_TRUE(names(dir).count("shard-3"));  // kept until commit
    write(out.temp_path("shard-0"), "new0");
    write(out.temp_path("manifest.json"), "new");
    out.commit();
  }
  EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock", "shard-0", "manifest.json"}));
}

TEST(OutputDir, FinishedOutputNeedsOverwrite) {
  TempDir t;
  std::string dir = t.path.string();
  {
    OutputDir out(dir, options());
    write(out.temp_path("shard-0"), "old0");
    write(out.temp_path("shard-1"), "old1");
    write(out.temp_path("manifest.json"), "old");
    out.commit();
  }
  EXPECT_THROW(OutputDir(dir, options()), ConfigError);
  {
    OutputDir out(dir, options(/*overwrite=*/true));
    EXPECT_TRUE(names(dir).count("shard-1"));  // untouched until commit
    write(out.temp_path("shard-0"), "new0");
    write(out.temp_path("manifest.json"), "new");
    out.commit();
  }
  // shard-1 belonged to the old set only: gone.
  EXPECT_EQ(names(dir), (std::set<std::string>{".fastnn.lock", "shard-0", "manifest.json"}));
  std::ifstream in(dir + "/shard-0");
  std::string s;
  in >> s;
  EXPECT_EQ(s, "new0");
}

TEST(OutputDir, OneWriterAtATime) {
  TempDir t;
  OutputDir first(t.path.string(), options());
  try {
    OutputDir second(t.path.string(), options());
    FAIL() << "second writer accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("another fastnn process"), std::string::npos) << e.what();
  }
}

TEST(OutputDir, PathUnderARegularFile) {
  TempDir t;
  write((t.path / "file.txt").string(), "x");
  std::string dir = (t.path / "file.txt" / "out").string();
  try {
    OutputDir out(dir, options());
    FAIL() << "accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("file.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
}

TEST(OutputDir, CommitWithoutMarkerIsRefused) {
  TempDir t;
  OutputDir out(t.path.string(), options());
  write(out.temp_path("shard-0"), "x");
  EXPECT_THROW(out.commit(), Error);
}

}  // namespace
}  // namespace fastnn
