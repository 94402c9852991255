#include "trainer/serve/http_message.h"

#include "core/check.h"

namespace fastnn::serve {

const std::string* HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name) return &value;
  return nullptr;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string serialize_response(const HttpResponse& r, bool keep_alive) {
  FASTNN_CHECK(r.status >= 100 && r.status <= 999, "serve: status ", r.status, " is not an HTTP status");
  std::string s = str("HTTP/1.1 ", r.status, ' ', reason_phrase(r.status), "\r\n");
  auto add = [&s](std::string_view name, std::string_view value) {
    FASTNN_CHECK(value.find_first_of("\r\n") == std::string_view::npos && name.find_first_of("\r\n:") == std::string_view::npos,
                 "serve: a response header holds a line break");
    s.append(name).append(": ").append(value).append("\r\n");
  };
  if (!r.content_type.empty()) add("Content-Type", r.content_type);
  add("Content-Length", std::to_string(r.body.size()));
  add("Connection", keep_alive ? "keep-alive" : "close");
  for (const auto& [name, value] : r.headers) add(name, value);
  s += "\r\n";
  s += r.body;
  return s;
}

}  // namespace fastnn::serve
