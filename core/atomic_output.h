// A set of files that appears in a directory all together, or not at all.
//
// Files are written under temporary names (".<name>.fastnn-tmp" in the same directory, so the final
// rename(2) never crosses a file system) and commit() renames them into place with the commit marker
// (the manifest) last, after fsync of every file and of the directory. Until the marker exists, the
// directory holds no complete output:
//   - the destructor of an uncommitted OutputDir (an exception, a failed conversion) removes its
//     temporaries, so no final-named file and no temporary is left (and a directory it created is
//     removed again when nothing else is in it);
//   - after a kill -9 only temporaries are left (outside the few-millisecond commit); the next
//     OutputDir on that directory removes them, and also removes final-named files (`owned` names)
//     that are not accompanied by a marker: leftovers of a commit that was interrupted — but only
//     when it can prove a fastnn run wrote them: every OutputDir creates ".fastnn-incomplete" before
//     its first temporary and removes it after the marker. Owned names without a marker and without
//     that file are someone else's: a ConfigError lists them (they are kept) unless `overwrite` is
//     set, in which case commit() replaces them as it replaces a finished output.
// A directory that already holds a marker is a finished output: opening it is a ConfigError unless
// `overwrite` is set, in which case commit() removes the old marker first, then the old owned files
// the new set does not replace, then renames the new set in.
// One writer per directory: an exclusive flock(2) on "<dir>/.fastnn.lock" (released by the kernel
// when the process dies) makes a second concurrent writer fail instead of interleaving.
//
// Errors: IoError naming the path (a directory that cannot be created, e.g. one under a regular file;
// a failed rename or fsync). Not thread-safe: one thread creates and commits; the temporary paths may
// be written from any thread.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace fastnn {

class OutputDir {
 public:
  struct Options {
    std::string marker = "manifest.json";
    // Names (inside dir) that belong to a finished output, besides the marker.
    std::function<bool(const std::string& name)> owned;
    bool overwrite = false;
    // fsync every file and the directory before the marker appears, so that a power failure cannot
    // leave a marker naming data that never reached the disk. Off (--no-sync) only skips that
    // durability step: the rename order, and so kill -9 safety, are unchanged.
    bool sync = true;
  };

  // Creates `dir` and its parents as needed, locks it and cleans up after an earlier run (above).
  OutputDir(std::string dir, Options options);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& dir() const { return dir_; }
  // Registers `name` as part of the set and returns the temporary path to write it to.
  std::string temp_path(const std::string& name);
  // The path `name` will have once committed.
  std::string final_path(const std::string& name) const;
  // Renames every registered file into place, the marker last (it must be registered).
  void commit();
  bool committed() const { return committed_; }
  // Files (stale temporaries and unmarked leftovers) the constructor removed.
  const std::vector<std::string>& cleaned_up() const { return cleaned_; }

  static std::string temp_name(const std::string& name) { return "." + name + ".fastnn-tmp"; }
  static bool is_temp_name(const std::string& name);

 private:
  void remove_temporaries() noexcept;
  void write_incomplete_marker();

  std::string dir_;
  Options options_;
  int lock_fd_ = -1;
  bool created_ = false;
  bool committed_ = false;
  std::vector<std::string> names_;
  std::vector<std::string> cleaned_;
};

// Creates `dir` and missing parents; IoError naming the first component that fails (for example a
// path under a regular file: "out/file.txt/shards: cannot create directory: out/file.txt exists and is
// not a directory"). Returns true when `dir` itself was created.
bool make_directories(const std::string& dir);
// fsync of a file or directory by path.
void fsync_path(const std::string& path);
// Asks the kernel to start writing a file's dirty pages now, without waiting (Linux
// sync_file_range; elsewhere nothing). Writers call it when a file is complete, so that the final
// fsync overlaps with the rest of the work instead of following it. Errors are ignored.
void start_writeback(const std::string& path) noexcept;

}  // namespace fastnn
