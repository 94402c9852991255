#include "cli/error_report.h"

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "core/check.h"

namespace fastnn::cli {

int report_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ExitStatus& e) {
    return e.code;
  } catch (const UsageError& e) {  // a flag that cannot mean anything: as CLI11's own, exit 2
    std::fprintf(stderr, "fastnn: error: %s\n", e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "fastnn: error: %s\n", e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    // The operating system refused (a folder under a regular file, a read-only mount): the user's to fix,
    // so said as an error naming the path, not as an internal one.
    std::fprintf(stderr, "fastnn: error: %s: %s\n", e.path1().c_str(), e.code().message().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fastnn: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "fastnn: internal error: an exception of an unknown type\n");
  }
  return 1;
}

void exit_with_the_other_ranks(const std::exception_ptr& reported, const std::function<void()>& barrier) {
  int code = 1;
  if (reported) {
    code = report_error(reported);
    std::fflush(stderr);
  }
  barrier();
  throw ExitStatus{code};
}

}  // namespace fastnn::cli
