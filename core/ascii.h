// ASCII case folding for names users type or files carry (extensions, split folders, flag values,
// media types): locale-independent, bytes over 0x7f unchanged.
#pragma once

#include <string>
#include <string_view>

namespace fastnn {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace fastnn
