#include "trainer/serve/http_parser.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/check.h"

namespace fastnn::serve {
namespace {

// A request line longer than the target limit by more than this is answered 414 before its end arrives.
constexpr size_t kRequestLineSlack = 64;
// A chunk-size line: up to 16 hex digits and extensions we ignore; longer is abuse, not a client.
constexpr size_t kMaxChunkLine = 1024;

bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

// field-vchar / SP / HTAB / obs-text: every byte but the controls (HTAB aside) and DEL.
bool is_field_byte(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

}  // namespace

RequestParser::RequestParser(const ParserLimits& limits) : limits_(limits) {
  FASTNN_CHECK(limits.max_head_bytes >= 64 && limits.max_target_bytes >= 1 && limits.max_headers >= 1,
               "serve: parser limits too small to hold any request");
}

void RequestParser::reset() {
  state_ = State::kHead;
  body_ = Body::kNone;
  started_ = head_done_ = false;
  std::string().swap(head_);
  std::string().swap(line_);
  first_line_end_ = content_length_ = chunk_left_ = trailer_bytes_ = body_seen_ = 0;
  // Not `request_ = HttpRequest{}`: moving an empty string into one keeps the latter's heap buffer.
  std::exchange(request_, HttpRequest{});
  error_status_ = 0;
  error_.clear();
}

HttpRequest RequestParser::take() {
  FASTNN_CHECK(state_ == State::kDone, "serve: take() before the request is complete");
  return std::move(request_);
}

void RequestParser::fail(int status, std::string message) {
  state_ = State::kFailed;
  error_status_ = status;
  error_ = std::move(message);
  std::string().swap(request_.body);  // nothing reads it any more; the memory goes back at once
  std::string().swap(head_);
  std::string().swap(line_);
}

size_t RequestParser::feed(std::string_view bytes) {
  size_t used = 0;
  if (state_ == State::kHead) used = feed_head(bytes);
  if (state_ == State::kBody && used < bytes.size()) used += feed_body(bytes.substr(used));
  return used;
}

size_t RequestParser::feed_head(std::string_view in) {
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    started_ = true;
    if (!head_.empty() && head_.back() == '\r' && c != '\n') {
      fail(400, "a bare CR in the request head (lines end in CRLF)");
      return i;
    }
    if (c == '\n' && (head_.empty() || head_.back() != '\r')) {
      fail(400, "a bare LF in the request head (lines end in CRLF)");
      return i;
    }
    head_ += c;
    if (c == '\n') {
      if (head_.size() == 2) {  // an empty line before the request line: allowed, skipped
        head_.clear();
        continue;
      }
      if (first_line_end_ == 0) first_line_end_ = head_.size();
      if (head_.size() >= 4 && head_.compare(head_.size() - 4, 4, "\r\n\r\n") == 0) {
        parse_head();
        return i + 1;
      }
    }
    if (first_line_end_ == 0 && head_.size() > limits_.max_target_bytes + kRequestLineSlack) {
      fail(414, str("the request line is longer than the server's limit (", limits_.max_target_bytes, " bytes of target)"));
      return i + 1;
    }
    if (head_.size() > limits_.max_head_bytes) {
      fail(431, str("the request head is larger than the server's limit (", limits_.max_head_bytes, " bytes)"));
      return i + 1;
    }
  }
  return in.size();
}

void RequestParser::parse_head() {
  const std::string_view h(head_);
  if (!parse_request_line(h.substr(0, first_line_end_ - 2))) return;
  size_t pos = first_line_end_;
  for (;;) {
    const size_t end = h.find("\r\n", pos);
    const std::string_view line = h.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    if (!parse_field(line, false)) return;
  }
  std::string().swap(head_);
  head_done_ = true;
  frame_body();
}

bool RequestParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) {
    fail(400, "malformed request line (expected METHOD SP TARGET SP HTTP/1.1)");
    return false;
  }
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method)) {
    fail(400, "malformed request method");
    return false;
  }
  request_.method = method;
  if (target.size() > limits_.max_target_bytes) {
    fail(414, str("the request target is longer than the server's limit (", limits_.max_target_bytes, " bytes)"));
    return false;
  }
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    fail(400, "malformed request target");
    return false;
  }
  request_.target = target;
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || hex_value(version[5]) < 0 || hex_value(version[5]) > 9 ||
      version[6] != '.' || hex_value(version[7]) < 0 || hex_value(version[7]) > 9) {
    fail(400, "malformed HTTP version in the request line");
    return false;
  }
  if (version[5] != '1') {
    fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    return false;
  }
  request_.minor_version = version[7] == '0' ? 0 : 1;
  request_.keep_alive = request_.minor_version == 1;

  std::string_view p = target;
  if (p == "*") {
    request_.path.assign(1, '*');  // not = "*": GCC 12 warns falsely (-Wstringop-overflow)
    return true;
  }
  const std::string scheme = lower(p.substr(0, 8));
  if (scheme.rfind("http://", 0) == 0 || scheme.rfind("https://", 0) == 0) {  // absolute-form
    p.remove_prefix(scheme[4] == 's' ? 8 : 7);
    const size_t at = p.find_first_of("/?#");
    p = at == std::string_view::npos || p[at] != '/' ? std::string_view("/") : p.substr(at);
  } else if (p.front() != '/') {
    fail(400, "the request target must be a path (\"/v1/classify\")");
    return false;
  }
  p = p.substr(0, p.find_first_of("?#"));
  if (!percent_decode(p, request_.path)) {
    fail(400, "a bad %-escape in the request path");
    return false;
  }
  return true;
}

bool RequestParser::parse_field(std::string_view line, bool trailer) {
  if (line.front() == ' ' || line.front() == '\t') {
    fail(400, "a folded header line (obs-fold) is not accepted");
    return false;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
    fail(400, "malformed header field (expected NAME: VALUE, no blank before the colon)");
    return false;
  }
  const std::string_view value = trim_ows(line.substr(colon + 1));
  if (!std::all_of(value.begin(), value.end(), [](char c) { return is_field_byte(static_cast<unsigned char>(c)); })) {
    fail(400, "a control character in a header field value");
    return false;
  }
  if (trailer) return true;  // trailer fields are checked for syntax, then dropped
  if (request_.headers.size() >= limits_.max_headers) {
    fail(431, str("more than ", limits_.max_headers, " header fields"));
    return false;
  }
  request_.headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  return true;
}

void RequestParser::frame_body() {
  int hosts = 0, lengths = 0, encodings = 0;
  std::string length, transfer, content_encoding;
  bool expect_continue = false;
  int expect_status = 0;
  for (const auto& [name, value] : request_.headers) {
    if (name == "host") {
      ++hosts;
    } else if (name == "content-length") {
      ++lengths;
      length = value;
    } else if (name == "transfer-encoding") {
      ++encodings;
      transfer = lower(value);
    } else if (name == "content-encoding") {
      if (lower(value) != "identity" && content_encoding.empty()) content_encoding = value;
    } else if (name == "expect") {
      if (lower(value) == "100-continue") expect_continue = true;
      else expect_status = 417;
    } else if (name == "connection") {
      const std::string v = lower(value);
      for (size_t b = 0; b <= v.size();) {
        size_t e = v.find(',', b);
        if (e == std::string::npos) e = v.size();
        const std::string_view token = trim_ows(std::string_view(v).substr(b, e - b));
        if (token == "close") request_.keep_alive = false;
        if (token == "keep-alive" && request_.minor_version == 0) request_.keep_alive = true;
        b = e + 1;
      }
    }
  }
  if (request_.minor_version == 1 && hosts != 1)
    return fail(400, hosts == 0 ? "an HTTP/1.1 request needs a Host header" : "more than one Host header");
  if (lengths > 1) return fail(400, "more than one Content-Length header");
  if (encodings > 1) return fail(400, "more than one Transfer-Encoding header");
  if (lengths && encodings) return fail(400, "both Content-Length and Transfer-Encoding: the body's length is ambiguous");
  if (encodings && request_.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
  if (encodings && transfer != "chunked") return fail(501, "only Transfer-Encoding: chunked is supported");
  if (lengths) {
    if (length.empty() || !std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return fail(400, "Content-Length must be a decimal number");
    const size_t digits = length.size() - std::min(length.find_first_not_of('0'), length.size());
    uint64_t n = 0;
    for (char c : length) n = digits > 19 ? UINT64_MAX : n * 10 + static_cast<uint64_t>(c - '0');
    if (n > limits_.max_body_bytes)
      return fail(413, str("the request body is larger than the server's limit (", limits_.max_body_bytes, " bytes)"));
    content_length_ = static_cast<size_t>(n);
  }
  if (!content_encoding.empty())
    return fail(415, str("compressed request bodies (Content-Encoding: ", content_encoding, ") are not accepted; send it uncompressed"));
  if (expect_status) return fail(expect_status, "only Expect: 100-continue is supported");
  if (encodings) {
    body_ = Body::kChunkSize;
  } else if (lengths && content_length_ > 0) {
    body_ = Body::kLength;
  } else if (!lengths && (request_.method == "POST" || request_.method == "PUT" || request_.method == "PATCH")) {
    return fail(411, str("a ", request_.method, " needs Content-Length or Transfer-Encoding: chunked"));
  }
  state_ = body_ == Body::kNone ? State::kDone : State::kBody;
  request_.expect_continue = expect_continue && state_ == State::kBody && request_.minor_version == 1;
}

void RequestParser::append_body(const char* p, size_t n) {
  std::string& b = request_.body;
  const size_t need = b.size() + n;
  if (need > b.capacity()) {
    // Doubling, capped at the declared length (or the limit). reserve() on the string itself would round a
    // request below twice its capacity up to twice (libstdc++), past the cap: a fresh string gets exactly it.
    const size_t cap = body_ == Body::kLength ? content_length_ : limits_.max_body_bytes;
    std::string grown;
    grown.reserve(std::min(cap, std::max({need, 2 * b.capacity(), size_t{64} << 10})));
    grown.append(b);
    b.swap(grown);
  }
  b.append(p, n);
}

bool RequestParser::line_byte(char c, size_t max_line, int too_long_status, const char* what) {
  if (!line_.empty() && line_.back() == '\r' && c != '\n') {
    fail(400, str("a bare CR in ", what));
    return false;
  }
  if (c == '\n' && (line_.empty() || line_.back() != '\r')) {
    fail(400, str("a bare LF in ", what));
    return false;
  }
  line_ += c;
  if (line_.size() > max_line) {
    fail(too_long_status, str(what, " is too long"));
    return false;
  }
  return true;
}

bool RequestParser::chunk_size_line() {
  const std::string_view l(line_.data(), line_.size() - 2);
  size_t k = 0;
  uint64_t size = 0;
  for (; k < l.size() && hex_value(l[k]) >= 0; ++k) {
    size = size * 16 + static_cast<uint64_t>(hex_value(l[k]));
    if (size > limits_.max_body_bytes) break;  // before it can overflow
  }
  if (k == 0) {
    fail(400, "a chunk size must be hexadecimal digits");
    return false;
  }
  if (size > limits_.max_body_bytes - request_.body.size()) {
    fail(413, str("the request body is larger than the server's limit (", limits_.max_body_bytes, " bytes)"));
    return false;
  }
  const std::string_view ext = trim_ows(l.substr(k));
  if (!ext.empty() && (ext.front() != ';' || !std::all_of(ext.begin(), ext.end(), [](char c) {
                         return is_field_byte(static_cast<unsigned char>(c));
                       }))) {
    fail(400, "malformed chunk-size line");
    return false;
  }
  line_.clear();
  chunk_left_ = static_cast<size_t>(size);
  body_ = size == 0 ? Body::kTrailer : Body::kChunkData;
  return true;
}

bool RequestParser::trailer_line() {
  if (line_ == "\r\n") {
    std::string().swap(line_);
    state_ = State::kDone;
    return true;
  }
  if (!parse_field(std::string_view(line_.data(), line_.size() - 2), true)) return false;
  line_.clear();
  return true;
}

size_t RequestParser::feed_body(std::string_view in) {
  size_t i = 0;
  while (i < in.size() && state_ == State::kBody) {
    switch (body_) {
      case Body::kLength: {
        const size_t n = std::min(content_length_ - request_.body.size(), in.size() - i);
        append_body(in.data() + i, n);
        i += n;
        if (request_.body.size() == content_length_) state_ = State::kDone;
        break;
      }
      case Body::kChunkData: {
        const size_t n = std::min(chunk_left_, in.size() - i);
        append_body(in.data() + i, n);
        i += n;
        chunk_left_ -= n;
        if (chunk_left_ == 0) body_ = Body::kChunkCr;
        break;
      }
      case Body::kChunkCr:
      case Body::kChunkLf:
        if (in[i] != (body_ == Body::kChunkCr ? '\r' : '\n')) {
          fail(400, "a chunk's data must end in CRLF");
          break;
        }
        ++i;
        body_ = body_ == Body::kChunkCr ? Body::kChunkLf : Body::kChunkSize;
        break;
      case Body::kChunkSize:
        if (line_byte(in[i], kMaxChunkLine, 400, "a chunk-size line") && in[i++] == '\n') chunk_size_line();
        break;
      case Body::kTrailer:
        if (++trailer_bytes_ > limits_.max_head_bytes) {
          fail(431, str("the trailer section is larger than the server's limit (", limits_.max_head_bytes, " bytes)"));
          break;
        }
        if (line_byte(in[i], limits_.max_head_bytes, 431, "the trailer section") && in[i++] == '\n') trailer_line();
        break;
      case Body::kNone:
        FASTNN_CHECK(false, "serve: body state without a body");
    }
  }
  body_seen_ += i;
  return i;
}

}  // namespace fastnn::serve
