#include "core/report/page_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/output_file.h"
#include "core/check.h"

namespace fastnn::report {

void write_page_file(const std::string& path, std::string_view content, bool overwrite) {
  FASTNN_CHECK(!path.empty(), "report: empty output path");
  checked_output_target(path);  // a FIFO or device is refused as such, --overwrite or not
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw ConfigError(str(path, " is a folder; give the report's file name"));
    if (!overwrite) throw ConfigError(str(path, " exists; pass --overwrite to replace it"));
  }
  OutputFile page(path);
  page.write(content);
  page.commit();
}

}  // namespace fastnn::report
