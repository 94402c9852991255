#include "core/report/page_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/atomic_output.h"
#include "core/check.h"

namespace fastnn::report {

void write_page_file(const std::string& path, std::string_view content, bool overwrite) {
  FASTNN_CHECK(!path.empty(), "report: empty output path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw ConfigError(str(path, " is a folder; give the report's file name"));
    if (!overwrite) throw ConfigError(str(path, " exists; pass --overwrite to replace it"));
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string tmp = dir + OutputDir::temp_name(path.substr(slash == std::string::npos ? 0 : slash + 1));
  std::FILE* f = std::fopen(tmp.c_str(), "we");
  if (!f) throw_io_error(tmp, "create");
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() && std::fflush(f) == 0 &&
                  ::fsync(fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok) {
    const int e = errno;
    std::remove(tmp.c_str());
    errno = e;  // throw_io_error names errno's reason
    throw_io_error(tmp, "write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    errno = e;
    throw_io_error(tmp, str("rename to ", path));
  }
}

}  // namespace fastnn::report
