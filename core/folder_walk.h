// Listing and walking folders of input files, the same way for every command that takes a folder
// (`convert image-folder`, `predict --input FOLDER`).
//
// - Entries are sorted by name, so a walk is deterministic; symbolic links are followed (a linked
//   folder is walked, a linked file is a file).
// - Every folder is walked once: a folder reached again (a symbolic link to an ancestor, a loop, or a
//   second link to the same folder) is not entered again, and is reported among `ignored` with the
//   reason, so a loop ends and no file is counted twice. Folders nested deeper than kMaxFolderDepth
//   are a FormatError.
// - Hidden entries (".name") are passed over and reported in `ignored`.
// - An entry that is neither a folder nor a regular file (a FIFO, a device, a dangling link, one that
//   cannot be stat'ed) is never opened: when the caller wants its name (`wanted`, e.g. image names)
//   it becomes a file with `problem` set, so that it is reported as a bad input, not skipped in
//   silence; otherwise it is ignored with its reason.
// Errors: IoError naming a folder that cannot be listed (permission denied) or a root that is not a
// folder. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fastnn {

inline constexpr int kMaxFolderDepth = 64;

struct FolderEntry {
  std::string name;
  bool is_dir = false;
  bool is_file = false;
  std::string problem;  // neither: why ("is a FIFO (named pipe), not a regular file", "a dangling symbolic link ...")
};

// Sorted entries of `dir` ("." and ".." left out), each stat'ed with symlinks followed.
std::vector<FolderEntry> list_folder(const std::string& dir);

struct WalkedFile {
  std::string path;
  std::string problem;  // empty: a regular file
};

struct IgnoredEntry {
  std::string path;
  std::string reason;  // "hidden", "not an image", "already walked as PATH" (a folder linked twice), "is a socket, ..."
  std::string walked_as;  // a folder already walked: the path it was walked at (empty otherwise)
};

struct FolderWalk {
  std::vector<WalkedFile> files;
  std::vector<IgnoredEntry> ignored;
  std::vector<std::pair<uint64_t, uint64_t>> folders;  // (device, inode) of each folder this walk entered
};

// Walks `dir` depth first. `wanted(name)` says whether a regular file or a broken entry with that name
// is part of the walk; regular files it declines are ignored ("not wanted") unless `keep_unwanted`.
// Appends to *out, so several roots can share one walk (a folder shared between them is walked once).
class FolderWalker {
 public:
  using Wanted = std::function<bool(const std::string& name)>;
  FolderWalker(Wanted wanted, std::string unwanted_reason, bool keep_unwanted = false);
  void walk(const std::string& dir, FolderWalk* out);

 private:
  void walk_at(const std::string& dir, int depth, FolderWalk* out);
  Wanted wanted_;
  std::string unwanted_reason_;
  bool keep_unwanted_;
  std::map<std::pair<uint64_t, uint64_t>, std::string> visited_;  // (device, inode) of every folder entered -> its path then
};

}  // namespace fastnn
