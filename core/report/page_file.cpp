#include "core/report/page_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "core/check.h"
#include "core/output_file.h"
#include "core/report/html.h"

namespace fastnn::report {

bool is_fastnn_page(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // a FIFO would block the read
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find(kGeneratorMeta) != std::string::npos;
}

void check_page_target(const std::string& path, bool overwrite) {
  FASTNN_CHECK(!path.empty(), "report: empty output path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw ConfigError(str(path, " is a folder; give the report's file name"));
  checked_output_target(path);  // a FIFO or device is refused as such, --overwrite or not
  if (!overwrite && ::stat(path.c_str(), &st) == 0 && !is_fastnn_page(path))
    throw ConfigError(str(path, " exists and is not a page fastnn wrote; pass --overwrite to replace it"));
}

void write_page_file(const std::string& path, std::string_view content, bool overwrite) {
  check_page_target(path, overwrite);
  OutputFile page(path);
  page.write(content);
  page.commit();
}

}  // namespace fastnn::report
