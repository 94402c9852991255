#include "trainer/serve/access_log.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace fastnn::serve {

std::string escape_log_field(std::string_view bytes) {
  if (bytes.empty()) return "-";
  std::string out;
  out.reserve(bytes.size());
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string access_line(std::string_view peer, std::string_view method, std::string_view path, int status,
                        size_t body_bytes, double ms) {
  char tail[64];
  if (ms < 0) std::snprintf(tail, sizeof tail, "%d %zu -\n", status, body_bytes);
  else std::snprintf(tail, sizeof tail, "%d %zu %.3f\n", status, body_bytes, ms);
  std::string line = "serve: ";
  line.append(peer).append(" \"").append(escape_log_field(method)).append(" ").append(escape_log_field(path));
  return line.append("\" ").append(tail);
}

std::string access_json_line(std::string_view peer, std::string_view method, std::string_view path, int status,
                             size_t body_bytes, double ms) {
  using json = nlohmann::ordered_json;
  const auto text_or_null = [](std::string_view s) { return s.empty() ? json(nullptr) : json(std::string(s)); };
  json line = {{"peer", std::string(peer)},     {"method", text_or_null(method)}, {"path", text_or_null(path)},
               {"status", status},              {"bytes", body_bytes},
               {"ms", ms < 0 ? json(nullptr) : json(std::round(ms * 1000.0) / 1000.0)}};
  return line.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace) + "\n";
}

}  // namespace fastnn::serve
