// `--json` means the same in every command: the command's result as one JSON object on one line of
// stdout (progress and warnings stay on stderr), flushed at once so a script piping it sees it before
// a long-running command (serve) goes on; a failed stdout write is caught at exit (cli/main.cpp).
#pragma once

#include <cstdio>

namespace fastnn::cli {

template <class Json>
void print_json_line(const Json& object) {
  std::printf("%s\n", object.dump().c_str());
  std::fflush(stdout);
}

}  // namespace fastnn::cli
