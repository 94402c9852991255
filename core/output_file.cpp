#include "core/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "core/input_file.h"

namespace fastnn {
namespace {

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// The file a symbolic link names, as an absolute path; ConfigError for a link to nothing.
std::string follow_link(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr)
    throw ConfigError(str(path, " is a symbolic link to nothing (", std::strerror(errno),
                          "); name the output file itself"));
  return buf;
}

}  // namespace

std::string output_temp_path(const std::string& final_path) {
  const size_t slash = final_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : final_path.substr(0, slash + 1);
  return dir + "." + final_path.substr(slash == std::string::npos ? 0 : slash + 1) + ".fastnn-tmp";
}

std::string checked_output_target(const std::string& path, std::span<const std::string> inputs) {
  if (path.empty()) throw ConfigError("an empty output file name");
  if (path.back() == '/') throw ConfigError(str(path, ": the output names a folder, not a file"));
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file; a missing folder fails at create, naming it
    throw_io_error(path, "stat the output");
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    target = follow_link(path);
    if (::stat(target.c_str(), &st) != 0) throw_io_error(path, "stat the output");
  }
  if (!S_ISREG(st.st_mode))
    throw ConfigError(str(path, " is ", file_kind_name(st.st_mode),
                          ", not a regular file: fastnn writes an output beside its name and renames it into place, "
                          "which would replace the ",
                          S_ISDIR(st.st_mode) ? "folder" : "node itself", "; name a regular file"));
  for (const std::string& in : inputs) {
    struct stat is;
    if (::stat(in.c_str(), &is) == 0 && same_file(st, is))
      throw ConfigError(str(path, " is one of this command's inputs (", in,
                            "); writing the output there would destroy it: name another file"));
  }
  return target;
}

void refuse_existing_output(const std::string& path, bool overwrite, std::span<const std::string> inputs) {
  if (path.empty()) return;
  checked_output_target(path, inputs);
  struct stat st;
  if (!overwrite && ::lstat(path.c_str(), &st) == 0)
    throw ConfigError(str(path, " exists; pass --overwrite to replace it"));
}

OutputFile::OutputFile(std::string path, Options options)
    : path_(std::move(path)), options_(std::move(options)) {
  target_ = checked_output_target(path_, options_.inputs);
  tmp_ = output_temp_path(target_);
  f_ = std::fopen(tmp_.c_str(), "wbe");
  if (!f_) throw_io_error(path_, str("create ", tmp_));
  struct stat st;
  if (::stat(target_.c_str(), &st) == 0) (void)::fchmod(fileno(f_), st.st_mode & 07777);
}

OutputFile::~OutputFile() {
  if (f_) {
    std::fclose(f_);
    ::unlink(tmp_.c_str());
  }
}

void OutputFile::fail(const char* action) {
  const int err = errno;
  if (f_) std::fclose(f_);
  f_ = nullptr;
  ::unlink(tmp_.c_str());
  errno = err;
  throw_io_error(path_, action);
}

void OutputFile::write(std::string_view bytes) {
  FASTNN_CHECK(f_, path_, ": written after commit");
  if (std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size()) fail("write");
}

void OutputFile::commit() {
  FASTNN_CHECK(f_, path_, ": committed twice");
  if (std::fflush(f_) != 0 || std::ferror(f_)) fail("write");
  if (options_.sync && ::fsync(fileno(f_)) != 0) fail("write (fsync)");
  const int rc = std::fclose(std::exchange(f_, nullptr));
  if (rc != 0) fail("write (close)");
  rename_output_into_place(tmp_, path_, options_.inputs);
}

void rename_output_into_place(const std::string& tmp, const std::string& path, std::span<const std::string> inputs) {
  std::string target;
  try {
    target = checked_output_target(path, inputs);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    throw_io_error(path, str("rename ", tmp, " into place"));
  }
}

}  // namespace fastnn
