// `fastnn serve`'s access log: one line per answer on stderr,
//   serve: ADDR:PORT "METHOD PATH" STATUS BODY_BYTES MILLISECONDS
// METHOD and PATH come from the client: they are escaped so a line is always one line of printable
// ASCII (a decoded "%0A" in a path cannot forge a second line, "%1B" cannot send a terminal escape):
// bytes outside 0x20-0x7e as \xNN (two lower-case hex digits), '"' as \" and '\' as \\.
// "-" stands for a METHOD or PATH not read yet (a request refused before its request line ended) and
// for MILLISECONDS of a request refused while it was being received (nothing was routed).
// `fastnn serve --json` writes the same facts as one JSON object a line instead (access_json_line):
//   {"peer":"ADDR:PORT","method":"POST","path":"/v1/classify","status":200,"bytes":120,"ms":1.5}
// with null for what the text line shows as "-"; strings are JSON-escaped as printable ASCII (control
// characters as \u00XX, bytes that are not UTF-8 as U+FFFD), so a line is still always one line.
#pragma once

#include <string>
#include <string_view>

namespace fastnn::serve {

std::string escape_log_field(std::string_view bytes);

// ms < 0: "-". The line ends in '\n'.
std::string access_line(std::string_view peer, std::string_view method, std::string_view path, int status,
                        size_t body_bytes, double ms);
std::string access_json_line(std::string_view peer, std::string_view method, std::string_view path, int status,
                             size_t body_bytes, double ms);

enum class AccessLogFormat { kText, kJson };

inline std::string access_entry(AccessLogFormat format, std::string_view peer, std::string_view method,
                                std::string_view path, int status, size_t body_bytes, double ms) {
  return format == AccessLogFormat::kJson ? access_json_line(peer, method, path, status, body_bytes, ms)
                                          : access_line(peer, method, path, status, body_bytes, ms);
}

}  // namespace fastnn::serve
