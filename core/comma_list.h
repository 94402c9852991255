// Comma-separated lists as users type them in flags and config fields ("a, b,c"): the pieces between
// commas, and blank trimming. Callers decide what an empty piece means (dropped for a list of names,
// an error for a list of numbers, part of a file name never trimmed).
#pragma once

#include <string_view>
#include <vector>

namespace fastnn {

// Every piece between commas, empty ones included: "" gives {""}, "a,,b" gives {"a", "", "b"}.
// The views point into `s`.
inline std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
}

// `s` without leading and trailing spaces, tabs and line ends.
inline std::string_view trim_blanks(std::string_view s) {
  constexpr std::string_view kBlanks = " \t\r\n\f\v";
  const size_t b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

}  // namespace fastnn
