// Incremental, strict HTTP/1.1 request parser: bytes in (in pieces of any size), one request or an HTTP
// error status out. No sockets and no clock: the event loop (event_loop.h) feeds it what it reads and
// enforces the deadlines; unit tests and the fuzzer (tests/fuzz/fuzz_http_request.cpp) feed it directly.
//
// Bounded: the head (request line + header fields) is buffered up to max_head_bytes, the body up to
// max_body_bytes; nothing else grows with the input. A body's buffer grows with what arrived (never
// reserved from a Content-Length the client has not sent yet) and never beyond its declared length or
// max_body_bytes.
//
// Refused, with the status the server answers (then it closes the connection):
//   400  a malformed request line, header field or chunk; a bare CR or LF (lines end in CRLF); a header
//        line folded onto the previous one (obs-fold); a control character in a field value; two
//        Content-Length fields (even equal ones), one that is not plain digits; Content-Length together
//        with Transfer-Encoding; two Transfer-Encoding fields, or one in an HTTP/1.0 request; no Host, or
//        two (HTTP/1.1); a bad %-escape in the path.
//        Each of these is a framing ambiguity a proxy in front may read differently (request smuggling).
//   411  POST, PUT or PATCH with neither Content-Length nor Transfer-Encoding: chunked
//   413  a Content-Length, or a chunked body so far, over max_body_bytes (checked before the body is read)
//   414  a request-target over max_target_bytes
//   415  Content-Encoding other than identity: compressed bodies are refused, not inflated (an inflated
//        body is not bounded by the bytes received: a zip bomb)
//   417  Expect other than 100-continue
//   431  a head (or a chunked body's trailer section) over max_head_bytes, or more than max_headers fields
//   501  Transfer-Encoding other than exactly "chunked" (gzip, "gzip, chunked", ...)
//   505  an HTTP version other than 1.x
// Accepted leniently (RFC 9112): empty lines before the request line, chunk extensions and trailer
// fields (both ignored), HTTP/1.x with x > 1 (served as 1.1), absolute-form targets.
// Threading: one parser per connection, used by one thread at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "trainer/serve/http_message.h"

namespace fastnn::serve {

struct ParserLimits {
  size_t max_head_bytes = size_t{16} << 10;
  size_t max_target_bytes = size_t{8} << 10;
  size_t max_headers = 64;
  size_t max_body_bytes = size_t{32} << 20;
};

class RequestParser {
 public:
  enum class State { kHead, kBody, kDone, kFailed };

  explicit RequestParser(const ParserLimits& limits);

  // Consumes a prefix of `bytes` and returns its length: everything while the request is incomplete,
  // up to the end of the request once it completes (the rest belongs to the next request on the
  // connection), up to the offending byte when it fails; 0 in kDone and kFailed.
  size_t feed(std::string_view bytes);

  State state() const { return state_; }
  bool started() const { return started_; }       // any byte of this request arrived
  bool head_done() const { return head_done_; }   // request() holds method, target, path and headers
  // kBody, "Expect: 100-continue" and none of the body yet: the client waits for "100 Continue".
  bool awaits_continue() const { return state_ == State::kBody && request_.expect_continue && body_seen_ == 0; }
  const HttpRequest& request() const { return request_; }
  HttpRequest take();  // kDone: moves the request out; reset() before the next one
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }
  // Bytes allocated for this request (head buffer, body, chunk line): what the server accounts.
  size_t memory() const { return head_.capacity() + line_.capacity() + request_.body.capacity(); }

  void reset();

 private:
  enum class Body { kNone, kLength, kChunkSize, kChunkData, kChunkCr, kChunkLf, kTrailer };

  size_t feed_head(std::string_view bytes);
  size_t feed_body(std::string_view bytes);
  bool line_byte(char c, size_t max_line, int too_long_status, const char* what);
  void parse_head();
  bool parse_request_line(std::string_view line);
  bool parse_field(std::string_view line, bool trailer);
  void frame_body();
  bool chunk_size_line();
  bool trailer_line();
  void append_body(const char* p, size_t n);
  void fail(int status, std::string message);

  ParserLimits limits_;
  State state_ = State::kHead;
  Body body_ = Body::kNone;
  bool started_ = false, head_done_ = false;
  std::string head_;  // the head so far (kHead)
  std::string line_;  // a chunk-size or trailer line so far
  size_t first_line_end_ = 0;  // 0 until the request line's CRLF arrived
  size_t content_length_ = 0, chunk_left_ = 0, trailer_bytes_ = 0, body_seen_ = 0;
  HttpRequest request_;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace fastnn::serve
