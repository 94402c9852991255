// Writing a file the user named as an output (-o/--output, --embeddings, --report, ...): one way for
// every command, so that an output never destroys what it replaces.
//
// The file is written beside its final name under a temporary one (".<name>.fastnn-tmp", same folder,
// so the rename never crosses a file system) and renamed over the target only when it is complete and
// only when that is safe:
//   - an existing target must be a regular file. A FIFO, a device (/dev/null), a socket or a folder is
//     refused before any work: renaming over it would replace the node itself (as root, -o /dev/null
//     would delete the device), and a FIFO's reader would wait forever;
//   - the target must not be one of the command's inputs (same device and inode, so hard links and
//     other spellings of the path count): the input would be lost with the command still running;
//   - a symbolic link is followed: the file it names is replaced and the link is kept. A link to
//     nothing is refused (it is unclear what the user meant);
//   - an existing target's permission bits are kept.
// The checks run again just before the rename, in case the target changed meanwhile. Every write,
// flush, fsync and close is checked: a failure (a full disk) is an IoError naming the final path and
// errno's reason, and removes the temporary. An OutputFile destroyed without commit() (an exception on
// the way) removes its temporary: a failed command leaves the target as it was.
//
// Errors: ConfigError (a target that is not a regular file, is an input, or a dangling link), IoError
// (the operating system refused: create, write, rename). One thread per OutputFile.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn {

// The checks above: returns the path the finished file is renamed onto (`path`, or the file a symbolic
// link names). `inputs` are paths the command reads; missing ones are passed over.
std::string checked_output_target(const std::string& path, std::span<const std::string> inputs = {});

// `--overwrite`, the same in every command: checked_output_target's refusals first (so a FIFO or an
// input is named as such), then an existing output is replaced only when the user asked: without
// `overwrite` it is a ConfigError naming the flag. For a command to call before its work. "" passes.
// (Report pages fastnn wrote itself are refreshed without it: core/report/page_file.h.)
void refuse_existing_output(const std::string& path, bool overwrite, std::span<const std::string> inputs = {});

// The temporary name beside `final_path`: "dir/.name.fastnn-tmp".
std::string output_temp_path(const std::string& final_path);

struct OutputFileOptions {
  std::vector<std::string> inputs;  // see checked_output_target
  bool sync = true;                 // fsync before the rename: the new file is on disk when it appears
};

class OutputFile {
 public:
  using Options = OutputFileOptions;

  // Checks the target and creates the temporary.
  explicit OutputFile(std::string path, Options options = {});
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* get() { return f_; }
  // Writes all of `bytes`; IoError naming the output on failure.
  void write(std::string_view bytes);
  // Closes the temporary (every error checked) and renames it onto the target.
  void commit();
  const std::string& path() const { return path_; }  // as the user gave it
  const std::string& temp_path() const { return tmp_; }

 private:
  [[noreturn]] void fail(const char* action);
  std::string path_, target_, tmp_;
  Options options_;
  std::FILE* f_ = nullptr;
};

// A writer that keeps its own temporary (written under output_temp_path(target)) renames it with this:
// the target is checked again, then the rename; on failure the temporary is removed.
void rename_output_into_place(const std::string& tmp, const std::string& path, std::span<const std::string> inputs = {});

}  // namespace fastnn
