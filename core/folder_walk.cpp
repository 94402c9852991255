#include "core/folder_walk.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/check.h"
#include "core/input_file.h"

namespace fastnn {
namespace {

// "photos/" + "a.jpg" is "photos/a.jpg", not "photos//a.jpg": the paths are shown to users (predict's
// "source", convert's ignored files).
std::string join_path(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

std::vector<FolderEntry> list_folder(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw_io_error(dir, "list folder");
  std::vector<FolderEntry> out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    FolderEntry en{n};
    const std::string p = join_path(dir, n);
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) {
      en.is_dir = S_ISDIR(st.st_mode);
      en.is_file = S_ISREG(st.st_mode);
      if (!en.is_dir && !en.is_file) en.problem = str("is ", file_kind_name(st.st_mode), ", not a regular file");
    } else {
      const int err = errno;
      struct stat lst;
      if (::lstat(p.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
        en.problem = err == ENOENT ? "a dangling symbolic link (its target does not exist)"
                                   : str("a symbolic link that cannot be followed: ", std::strerror(err));
      else
        en.problem = str("cannot stat: ", std::strerror(err));
    }
    out.push_back(std::move(en));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const FolderEntry& a, const FolderEntry& b) { return a.name < b.name; });
  return out;
}

FolderWalker::FolderWalker(Wanted wanted, std::string unwanted_reason, bool keep_unwanted)
    : wanted_(std::move(wanted)), unwanted_reason_(std::move(unwanted_reason)), keep_unwanted_(keep_unwanted) {}

void FolderWalker::walk(const std::string& dir, FolderWalk* out) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) throw_io_error(dir, "open folder");
  if (!S_ISDIR(st.st_mode)) throw IoError(str(dir, ": is ", file_kind_name(st.st_mode), ", not a folder"));
  walk_at(dir, 0, out);
}

void FolderWalker::walk_at(const std::string& dir, int depth, FolderWalk* out) {
  if (depth > kMaxFolderDepth) throw FormatError(str(dir, ": folders nested more than ", kMaxFolderDepth, " deep"));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) throw_io_error(dir, "open folder");
  const std::pair<uint64_t, uint64_t> id{st.st_dev, st.st_ino};
  if (const auto [at, first] = visited_.emplace(id, dir); !first) {
    out->ignored.push_back({dir, str("already walked as ", at->second), at->second});
    return;
  }
  out->folders.push_back(id);
  for (const FolderEntry& e : list_folder(dir)) {
    std::string p = join_path(dir, e.name);
    if (e.name[0] == '.') {
      out->ignored.push_back({std::move(p), "hidden"});
    } else if (e.is_dir) {
      walk_at(p, depth + 1, out);
    } else if (e.is_file) {
      if (keep_unwanted_ || !wanted_ || wanted_(e.name)) out->files.push_back({std::move(p), {}});
      else out->ignored.push_back({std::move(p), unwanted_reason_});
    } else if (wanted_ && wanted_(e.name)) {
      out->files.push_back({std::move(p), e.problem});  // named like a wanted file: a bad input, not ignored
    } else {
      out->ignored.push_back({std::move(p), e.problem});
    }
  }
}

}  // namespace fastnn
