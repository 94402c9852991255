#include "core/check.h"

#include <cerrno>
#include <cstring>

namespace fastnn {
namespace detail {

void check_failed(const char* file, int line, const char* expr, const std::string& msg) {
  throw Error(str(msg.empty() ? std::string("check failed") : msg, " [", expr, " at ", file, ":", line, "]"));
}

void library_call_failed(const char* file, int line, const char* lib, const char* expr,
                         const std::string& what) {
  throw Error(str(lib, " error: ", what, " in ", expr, " [", file, ":", line, "]"));
}

}  // namespace detail

void throw_io_error(const std::string& path, const std::string& action) {
  throw IoError(str(path, ": cannot ", action, ": ", std::strerror(errno)));
}

}  // namespace fastnn
