// Names are bytes, not text: how file paths and class names of any byte sequence are written into
// manifest.json and labels.txt and read back unchanged.
//
// POSIX file and folder names are arbitrary bytes (all but '/' and NUL); JSON strings must be UTF-8
// and labels.txt is one name per line. escape_name() keeps every printable, valid UTF-8 character
// as it is and writes each other byte as the four characters \xHH (two upper-case hex digits):
// bytes of invalid UTF-8 sequences, the C0 controls (newline, tab, CR...), DEL, and '\' itself, so
// that every '\' in an escaped name starts an escape. unescape_name() reverses it; a backslash not
// followed by x and two hex digits is taken literally (hand-written class-name files may hold one).
// So unescape_name(escape_name(s)) == s for every s, and names without those bytes are unchanged.
// docs/FORMATS.md documents the form for readers of the files.
#pragma once

#include <string>
#include <string_view>

namespace fastnn {

std::string escape_name(std::string_view bytes);
std::string unescape_name(std::string_view escaped);
// True when escape_name would change nothing (valid UTF-8, no control character, no '\').
bool is_plain_name(std::string_view bytes);
// Length of the valid UTF-8 sequence at s[0] (1..4), or 0 when s[0] does not start one.
size_t utf8_sequence_length(std::string_view s);

}  // namespace fastnn
