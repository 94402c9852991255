// The HTTP/1.1 messages `fastnn serve` exchanges: a parsed request (http_parser.h makes them) and a
// response, serialised with its framing headers.
//
// HttpRequest holds what the server needs and nothing it could be confused by: header names lower-cased,
// values without surrounding blanks; `path` is the request-target's path percent-decoded (any bytes,
// NUL and newlines included: compare it, print it only through access_log.h's escaping), the query
// dropped; `body` is the decoded body (chunked framing removed).
// serialize_response() writes the status line, Content-Type, Content-Length, Connection (keep-alive or
// close) and the response's own headers, which must not be framing headers and must hold no CR or LF
// (checked: the server only sets fixed ones such as Retry-After and Allow).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"

namespace fastnn::serve {

// A request the server refuses, with the HTTP status to answer and the message of its error body.
class RequestError : public Error {
 public:
  RequestError(int status, const std::string& message) : Error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // a token, as sent (methods are case-sensitive)
  std::string target;  // the request-target as sent (visible ASCII only)
  std::string path;    // decoded path of the target (absolute-form: the part after the authority)
  int minor_version = 1;  // HTTP/1.<minor_version>: 0 or 1
  HeaderList headers;
  std::string body;
  bool keep_alive = true;        // from the version and Connection
  bool expect_continue = false;  // "Expect: 100-continue" with a body to come

  // The first header of that (lower-case) name, or null.
  const std::string* header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HeaderList headers;  // besides the framing ones
};

// "OK", "Not Found", ...; "Unknown" for a status it does not name.
const char* reason_phrase(int status);

std::string serialize_response(const HttpResponse& response, bool keep_alive);

}  // namespace fastnn::serve
