// Fuzzes labels.txt / --class-names parsing and the escaped name form (core/name_escape.h) over
// arbitrary bytes. Only FormatError is an acceptable failure. Names that parse must write back as
// exactly one line each and parse to the same names; any byte string must survive escape + unescape.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/manifest.h"
#include "core/name_escape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string escaped = fastnn::escape_name(bytes);
  if (fastnn::unescape_name(escaped) != bytes) std::abort();
  if (escaped.find('\n') != std::string::npos || escaped.find('\0') != std::string::npos) std::abort();
  if (fastnn::is_plain_name(bytes) != (escaped == bytes)) std::abort();

  std::vector<std::string> names;
  try {
    names = fastnn::parse_labels_txt(bytes, "fuzz.txt");
  } catch (const fastnn::FormatError&) {
    return 0;
  }
  if (names.empty()) std::abort();  // an empty file is an error, never zero classes
  const std::string text = fastnn::format_labels_txt(names);
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  if (lines != names.size()) std::abort();
  if (fastnn::parse_labels_txt(text, "again.txt") != names) std::abort();
  return 0;
}
