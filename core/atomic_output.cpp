#include "core/atomic_output.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "core/check.h"
#include "core/logging.h"

namespace fastnn {
namespace {

constexpr const char* kLockName = ".fastnn.lock";
constexpr const char* kTempSuffix = ".fastnn-tmp";
constexpr const char* kIncompleteName = ".fastnn-incomplete";

std::vector<std::string> list_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw_io_error(dir, "list directory");
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_io_error(path, "remove");
}

}  // namespace

bool make_directories(const std::string& dir) {
  FASTNN_CHECK(!dir.empty(), "empty directory name");
  bool created = false;
  // Each prefix ending before a '/' and then the whole path.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0777) == 0) {
      created = pos == dir.size();
      continue;
    }
    int err = errno;
    struct stat st;
    if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      throw IoError(str(dir, ": cannot create directory: ", prefix, " exists and is not a directory"));
    }
    errno = err;
    throw_io_error(dir, str("create directory ", prefix));
  }
  return created;
}

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_io_error(path, "open for fsync");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) {
    errno = err;
    throw_io_error(path, "fsync");
  }
}

void start_writeback(const std::string& path) noexcept {
#ifdef __linux__
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  ::close(fd);
#else
  (void)path;
#endif
}

bool OutputDir::is_temp_name(const std::string& name) {
  const std::string suffix = kTempSuffix;
  return name.size() > suffix.size() + 1 && name[0] == '.' &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

OutputDir::OutputDir(std::string dir, Options options) : dir_(std::move(dir)), options_(std::move(options)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  created_ = make_directories(dir_);
  std::string lock_path = final_path(kLockName);
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock_fd_ < 0) throw_io_error(lock_path, "create lock file");
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK) throw IoError(str(dir_, ": another fastnn process is writing to this directory"));
    errno = err;
    throw_io_error(lock_path, "lock");
  }
  try {
    bool finished = exists(final_path(options_.marker));
    if (finished && !options_.overwrite)
      throw ConfigError(str(dir_, " already holds a finished output (", options_.marker,
                            "); choose another output directory or pass --overwrite"));
    // Proof of authorship: the ownership file a run writes before its first temporary and removes
    // after its marker. Without it, output-named files are not provably ours and are kept.
    const bool ours = exists(final_path(kIncompleteName));
    std::vector<std::string> foreign;
    for (const std::string& n : list_dir(dir_)) {
      if (is_temp_name(n) || (!finished && ours && options_.owned && options_.owned(n))) {
        remove_file(final_path(n));
        cleaned_.push_back(n);
      } else if (!finished && options_.owned && options_.owned(n)) {
        foreign.push_back(n);
      }
    }
    if (!foreign.empty() && !options_.overwrite) {
      std::string list;
      for (size_t i = 0; i < foreign.size() && i < 5; ++i) list += (i ? ", " : "") + foreign[i];
      if (foreign.size() > 5) list += str(", ... (", foreign.size(), " in all)");
      throw ConfigError(str(dir_, " holds files named like this output (", list, ") but no ", options_.marker,
                            " and no sign that fastnn wrote them, so they are left alone; move them away, or pass "
                            "--overwrite to replace them"));
    }
    write_incomplete_marker();
  } catch (...) {
    if (created_) {
      ::unlink(final_path(kLockName).c_str());
      ::rmdir(dir_.c_str());
    }
    ::close(lock_fd_);  // no destructor runs for a constructor that throws
    lock_fd_ = -1;
    throw;
  }
  if (!cleaned_.empty())
    log_warn(dir_, ": removed ", cleaned_.size(), " file(s) left by an interrupted run (", cleaned_.front(),
             cleaned_.size() > 1 ? ", ..." : "", ")");
}

void OutputDir::write_incomplete_marker() {
  const std::string path = final_path(kIncompleteName);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw_io_error(path, "create");
  const std::string text = str("fastnn output in progress (pid ", ::getpid(), "); removed when it is committed\n");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw_io_error(path, "write");
  if (options_.sync) {
    fsync_path(path);
    fsync_path(dir_);
  }
}

OutputDir::~OutputDir() {
  if (!committed_) {
    remove_temporaries();
    if (lock_fd_ >= 0) ::unlink(final_path(kIncompleteName).c_str());
    // A directory this run created and left empty goes too (rmdir fails harmlessly otherwise).
    if (created_ && lock_fd_ >= 0 && ::unlink(final_path(kLockName).c_str()) == 0) ::rmdir(dir_.c_str());
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void OutputDir::remove_temporaries() noexcept {
  for (const std::string& n : names_) ::unlink(final_path(temp_name(n)).c_str());
}

std::string OutputDir::final_path(const std::string& name) const { return dir_ + "/" + name; }

std::string OutputDir::temp_path(const std::string& name) {
  FASTNN_CHECK(!committed_, "output already committed");
  FASTNN_CHECK(!name.empty() && name.find('/') == std::string::npos && name[0] != '.', "bad output name ", name);
  if (std::find(names_.begin(), names_.end(), name) == names_.end()) names_.push_back(name);
  return final_path(temp_name(name));
}

void OutputDir::commit() {
  FASTNN_CHECK(!committed_, "output already committed");
  FASTNN_CHECK(std::find(names_.begin(), names_.end(), options_.marker) != names_.end(),
               "the commit marker ", options_.marker, " was never written");
  for (const std::string& n : names_) {
    std::string tmp = final_path(temp_name(n));
    if (!exists(tmp)) throw IoError(str(tmp, ": temporary output file is missing"));
    if (options_.sync) fsync_path(tmp);
  }
  // --overwrite: the old set stops being a finished output before any of its files changes.
  std::string marker_path = final_path(options_.marker);
  if (exists(marker_path) || options_.overwrite) {  // overwrite: also files not provably ours
    remove_file(marker_path);
    if (options_.sync) fsync_path(dir_);
    for (const std::string& n : list_dir(dir_)) {
      bool replaced = std::find(names_.begin(), names_.end(), n) != names_.end();
      if (!replaced && options_.owned && options_.owned(n)) remove_file(final_path(n));
    }
  }
  std::vector<std::string> renamed;
  try {
    for (const std::string& n : names_) {
      if (n == options_.marker) continue;
      if (::rename(final_path(temp_name(n)).c_str(), final_path(n).c_str()) != 0)
        throw_io_error(final_path(n), "rename into place");
      renamed.push_back(n);
    }
    if (options_.sync) fsync_path(dir_);
    if (::rename(final_path(temp_name(options_.marker)).c_str(), marker_path.c_str()) != 0)
      throw_io_error(marker_path, "rename into place");
  } catch (...) {
    // Without the marker the renamed files are not an output: take them back out.
    for (const std::string& n : renamed) ::unlink(final_path(n).c_str());
    throw;
  }
  committed_ = true;
  if (options_.sync) fsync_path(dir_);
  // Last: a kill before this leaves a finished output (the marker wins) plus a stale ownership file.
  ::unlink(final_path(kIncompleteName).c_str());
}

}  // namespace fastnn
