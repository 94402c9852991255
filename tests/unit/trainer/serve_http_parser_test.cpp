// serve: the incremental HTTP/1.1 request parser (trainer/serve/http_parser.h): requests split anywhere
// give the same result, every refusal and its status, chunked decoding, and the memory bounds.
#include <gtest/gtest.h>

#include "trainer/serve/http_parser.h"

namespace fastnn::serve {
namespace {

using State = RequestParser::State;
using namespace std::string_literals;

ParserLimits small_limits() {
  ParserLimits l;
  l.max_head_bytes = 1024;
  l.max_target_bytes = 256;
  l.max_headers = 8;
  l.max_body_bytes = 1000;
  return l;
}

struct Parsed {
  State state;
  int status = 0;
  std::string error;
  HttpRequest request;
  size_t used = 0;  // bytes consumed in all
};

// Feeds `bytes` in pieces of `piece` bytes (0: all at once) until the parser stops taking them.
Parsed parse(std::string_view bytes, size_t piece = 0, const ParserLimits& limits = small_limits()) {
  RequestParser p(limits);
  Parsed out{State::kHead};
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t n = piece == 0 ? bytes.size() - pos : std::min(piece, bytes.size() - pos);
    const size_t used = p.feed(bytes.substr(pos, n));
    pos += used;
    if (used < n) break;
  }
  out.state = p.state();
  out.used = pos;
  out.status = p.error_status();
  out.error = p.error();
  if (p.state() == State::kDone) out.request = p.take();
  return out;
}

// The status a request is refused with, the same whichever way it is split; 0 when it is not refused.
int refusal(std::string_view bytes, const ParserLimits& limits = small_limits()) {
  const Parsed whole = parse(bytes, 0, limits);
  for (size_t piece : {1, 3, 17}) {
    const Parsed split = parse(bytes, piece, limits);
    EXPECT_EQ(split.state, whole.state) << "piece " << piece << ": " << bytes;
    EXPECT_EQ(split.status, whole.status) << "piece " << piece << ": " << bytes;
  }
  if (whole.state == State::kFailed) {
    EXPECT_FALSE(whole.error.empty());
  }
  return whole.state == State::kFailed ? whole.status : 0;
}

std::string post(std::string_view headers, std::string_view body = "") {
  return std::string("POST /v1/classify HTTP/1.1\r\nHost: x\r\n").append(headers).append("\r\n").append(body);
}

TEST(ServeHttpParser, SimpleGetInAnyPieces) {
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent:  curl/8 \r\n\r\n";
  for (size_t piece : {0, 1, 2, 5, 64}) {
    const Parsed r = parse(req, piece);
    ASSERT_EQ(r.state, State::kDone) << piece;
    EXPECT_EQ(r.used, req.size());
    EXPECT_EQ(r.request.method, "GET");
    EXPECT_EQ(r.request.target, "/healthz");
    EXPECT_EQ(r.request.path, "/healthz");
    EXPECT_EQ(r.request.minor_version, 1);
    EXPECT_TRUE(r.request.keep_alive);
    EXPECT_TRUE(r.request.body.empty());
    ASSERT_NE(r.request.header("user-agent"), nullptr);
    EXPECT_EQ(*r.request.header("user-agent"), "curl/8");  // blanks around the value dropped
    EXPECT_EQ(*r.request.header("host"), "localhost:8080");
    EXPECT_EQ(r.request.header("accept"), nullptr);
  }
}

TEST(ServeHttpParser, BodyByContentLengthAndPipelining) {
  const std::string first = post("Content-Type: image/png\r\nContent-Length: 5\r\n", "hello");
  const std::string second = "GET /v1/model HTTP/1.1\r\nHost: x\r\n\r\n";
  RequestParser p(small_limits());
  const std::string both = first + second;
  const size_t used = p.feed(both);
  EXPECT_EQ(used, first.size());  // stops at the end of the first request
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.feed("more"), 0u);  // nothing more until reset
  HttpRequest r = p.take();
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(*r.header("content-type"), "image/png");
  p.reset();
  EXPECT_FALSE(p.started());
  EXPECT_EQ(p.feed(std::string_view(both).substr(used)), second.size());
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.take().path, "/v1/model");
}

TEST(ServeHttpParser, StartedAndEmptyLinesBeforeTheRequestLine) {
  RequestParser p(small_limits());
  EXPECT_FALSE(p.started());
  p.feed("\r\n");
  EXPECT_TRUE(p.started());
  p.feed("\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.request().path, "/");
}

TEST(ServeHttpParser, KeepAliveByVersionAndConnection) {
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, Close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);  // 1.0 needs no Host
  const Parsed ka = parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_TRUE(ka.request.keep_alive);
  EXPECT_EQ(ka.request.minor_version, 0);
  EXPECT_EQ(parse("GET / HTTP/1.7\r\nHost: x\r\n\r\n").request.minor_version, 1);  // a later 1.x is served as 1.1
}

TEST(ServeHttpParser, TargetForms) {
  EXPECT_EQ(parse("GET /v1/%63lassify?x=%zz HTTP/1.1\r\nHost: x\r\n\r\n").request.path, "/v1/classify");
  EXPECT_EQ(parse("GET /a%0Ab%1B[31m HTTP/1.1\r\nHost: x\r\n\r\n").request.path, "/a\nb\x1b[31m");
  EXPECT_EQ(parse("GET /a%00b HTTP/1.1\r\nHost: x\r\n\r\n").request.path, std::string("/a\0b", 4));
  EXPECT_EQ(parse("GET http://host:8080/v1/model?q HTTP/1.1\r\nHost: x\r\n\r\n").request.path, "/v1/model");
  EXPECT_EQ(parse("GET HTTPS://host HTTP/1.1\r\nHost: x\r\n\r\n").request.path, "/");
  EXPECT_EQ(parse("GET http://host?a=/b HTTP/1.1\r\nHost: x\r\n\r\n").request.path, "/");
  EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").request.path, "*");
  EXPECT_EQ(refusal("GET /a%4 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET /a%G0 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET /a% HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET v1/model HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET /a\x7f HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);  // raw non-ASCII: must be %-escaped
}

TEST(ServeHttpParser, MalformedRequestLines) {
  EXPECT_EQ(refusal("GET /\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET  / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);  // two blanks: an empty target
  EXPECT_EQ(refusal("GET / b HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("G(T / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal(" GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1 \r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / http/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET / HTTP/0.9\r\nHost: x\r\n\r\n"), 505);
}

TEST(ServeHttpParser, LineEndingsAndFieldSyntax) {
  EXPECT_EQ(refusal("GET / HTTP/1.1\nHost: x\n\n"), 400);           // bare LF
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\r\n\r\n"), 400);   // bare CR
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n"), 400);   // obs-fold
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n"), 400);  // obs-fold with a tab
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), 400);  // blank before the colon
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\n: empty name\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n"s), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: a\x01" "b\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: a\x7f" "b\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX: tab\there, \xe9t\xe9\r\n\r\n"), 0);  // HTAB, obs-text
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: x\r\nX:\r\n\r\n"), 0);  // an empty value
}

TEST(ServeHttpParser, Host) {
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.0\r\n\r\n"), 0);
}

TEST(ServeHttpParser, AmbiguousFramingIsRefused) {
  EXPECT_EQ(refusal(post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!")), 400);
  EXPECT_EQ(refusal(post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello")), 400);
  EXPECT_EQ(refusal(post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(refusal(post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(refusal(post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(refusal("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 400);
  for (const char* te : {"gzip", "gzip, chunked", "chunked, gzip", "chunked, chunked", "identity", "xchunked", "chunked;q=1"})
    EXPECT_EQ(refusal(post(std::string("Transfer-Encoding: ") + te + "\r\n", "0\r\n\r\n")), 501) << te;
  EXPECT_EQ(refusal(post("Transfer-Encoding: Chunked\r\n", "0\r\n\r\n")), 0);  // codings are case-insensitive
  for (const char* cl : {"12a", "-1", "+5", "5 5", "0x10", "5,5", "1e3", "\xef\xbc\x95"})
    EXPECT_EQ(refusal(post(std::string("Content-Length: ") + cl + "\r\n", "hello")), 400) << cl;
  EXPECT_EQ(refusal(post("Content-Length:\r\n", "hello")), 400);
  EXPECT_EQ(parse(post("Content-Length:  0005 \r\n", "hello")).request.body, "hello");  // OWS and leading zeros
}

TEST(ServeHttpParser, BodyRules) {
  EXPECT_EQ(refusal(post("")), 411);
  EXPECT_EQ(refusal("PUT /x HTTP/1.1\r\nHost: x\r\n\r\n"), 411);
  EXPECT_EQ(refusal("PATCH /x HTTP/1.1\r\nHost: x\r\n\r\n"), 411);
  EXPECT_EQ(refusal("DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  EXPECT_EQ(parse(post("Content-Length: 0\r\n")).state, State::kDone);
  for (const char* ce : {"gzip", "br", "deflate", "gzip, identity", "x-gzip"})
    EXPECT_EQ(refusal(post(std::string("Content-Encoding: ") + ce + "\r\nContent-Length: 5\r\n", "hello")), 415) << ce;
  EXPECT_EQ(refusal(post("Content-Encoding: Identity\r\nContent-Length: 5\r\n", "hello")), 0);
  EXPECT_EQ(refusal(post("Expect: 100-continue-please\r\nContent-Length: 5\r\n", "hello")), 417);
}

TEST(ServeHttpParser, SizeLimits) {
  const ParserLimits l = small_limits();
  EXPECT_EQ(refusal(post("Content-Length: 1000\r\n", std::string(1000, 'x'))), 0);
  // Refused from the header, before any of the body arrived.
  const Parsed big = parse(post("Content-Length: 1001\r\n"));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(refusal(post("Content-Length: 99999999999999999999999999\r\n")), 413);
  EXPECT_EQ(refusal(post("Content-Length: 18446744073709551616\r\n")), 413);  // 2^64
  EXPECT_EQ(refusal("GET /" + std::string(l.max_target_bytes, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"), 414);
  EXPECT_EQ(refusal("GET /" + std::string(l.max_target_bytes - 1, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
  // A request line that never ends is refused once it is longer than any acceptable one could be.
  const Parsed endless = parse("GET /" + std::string(100000, 'a'));
  EXPECT_EQ(endless.status, 414);
  EXPECT_LE(endless.used, l.max_target_bytes + 100);
  std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 8; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(refusal(many + "\r\n"), 431);  // 9 fields, 8 allowed
  const Parsed huge = parse("GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(100000, 'v'));
  EXPECT_EQ(huge.status, 431);
  EXPECT_LE(huge.used, l.max_head_bytes + 1);
}

TEST(ServeHttpParser, Chunked) {
  const std::string body = "5\r\nhello\r\n6;name=value;x\r\n world\r\nA\r\n0123456789\r\n00\r\nTrailer-Field: x\r\n\r\n";
  for (size_t piece : {0, 1, 2, 7}) {
    const Parsed r = parse(post("Transfer-Encoding: chunked\r\n", body + "GET"), piece);
    ASSERT_EQ(r.state, State::kDone) << piece << ": " << r.error;
    EXPECT_EQ(r.request.body, "hello world0123456789");
    EXPECT_EQ(r.used, post("Transfer-Encoding: chunked\r\n", body).size());  // not the next request's bytes
  }
  EXPECT_EQ(parse(post("Transfer-Encoding: chunked\r\n", "0\r\n\r\n")).request.body, "");
  EXPECT_EQ(parse(post("Transfer-Encoding: chunked\r\n", "0003 ; a = b\r\nabc\r\n0\r\n\r\n")).request.body, "abc");
}

TEST(ServeHttpParser, ChunkedRefusals) {
  const auto chunked = [](std::string_view body) { return refusal(post("Transfer-Encoding: chunked\r\n", body)); };
  EXPECT_EQ(chunked("zz\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(chunked(";ext\r\n"), 400);
  EXPECT_EQ(chunked("-5\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(chunked("5 x\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(chunked("5;a\x01\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(chunked("5\nhello\r\n0\r\n\r\n"), 400);           // bare LF
  EXPECT_EQ(chunked("5\r\nhelloXY0\r\n\r\n"), 400);           // no CRLF after the data
  EXPECT_EQ(chunked("5\r\nhello\n0\r\n\r\n"), 400);
  EXPECT_EQ(chunked("5\r\nhello\r\n0\r\n folded: x\r\n\r\n"), 400);
  EXPECT_EQ(chunked("5\r\nhello\r\n0\r\nbad trailer\r\n\r\n"), 400);
  EXPECT_EQ(chunked(std::string(2000, '0') + "\r\n"), 400);  // a chunk-size line past its bound
  // Over max_body_bytes (1000): one chunk, chunks together, and a size that would overflow 64 bits.
  EXPECT_EQ(chunked("3e9\r\n"), 413);
  EXPECT_EQ(chunked("3e8\r\n" + std::string(1000, 'x') + "\r\n1\r\n"), 413);
  EXPECT_EQ(chunked("fffffffffffffffffffffffff\r\n"), 413);
  EXPECT_EQ(chunked("5\r\nhello\r\n0\r\nX: " + std::string(2000, 't')), 431);  // trailer section over max_head_bytes
}

TEST(ServeHttpParser, ExpectContinue) {
  RequestParser p(small_limits());
  p.feed(post("Expect: 100-Continue\r\nContent-Length: 5\r\n"));
  EXPECT_TRUE(p.head_done());
  EXPECT_TRUE(p.awaits_continue());
  p.feed("he");
  EXPECT_FALSE(p.awaits_continue());  // the client did not wait
  p.feed("llo");
  ASSERT_EQ(p.state(), State::kDone);
  // Nothing to wait for without a body, nor in HTTP/1.0.
  RequestParser q(small_limits());
  q.feed(post("Expect: 100-continue\r\nContent-Length: 0\r\n"));
  EXPECT_FALSE(q.awaits_continue());
  RequestParser r(small_limits());
  r.feed("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  EXPECT_FALSE(r.awaits_continue());
}

TEST(ServeHttpParser, MemoryFollowsTheBytesReceived) {
  ParserLimits l = small_limits();
  l.max_body_bytes = size_t{8} << 20;
  {
    // A client that declares the largest body but sends one byte holds a small buffer, not 8 MiB.
    RequestParser p(l);
    p.feed(post("Content-Length: 8388608\r\n", "x"));
    EXPECT_EQ(p.state(), State::kBody);
    EXPECT_LE(p.memory(), size_t{80} << 10);
  }
  {
    // Growing by what arrives, never past the declared length.
    RequestParser p(l);
    const size_t n = 300000;
    p.feed(post("Content-Length: " + std::to_string(n) + "\r\n"));
    const std::string piece(1000, 'y');
    for (size_t sent = 0; sent < n; sent += piece.size()) {
      p.feed(piece);
      EXPECT_LE(p.memory(), std::max(2 * (sent + piece.size()), size_t{64} << 10) + 1024);
      EXPECT_LE(p.request().body.capacity(), n + 64);
    }
    ASSERT_EQ(p.state(), State::kDone);
    EXPECT_EQ(p.request().body.size(), n);
    p.reset();  // and gives it all back
    EXPECT_LE(p.memory(), 64u);
  }
  {
    // A failure releases the buffers at once.
    RequestParser p(l);
    p.feed(post("Transfer-Encoding: chunked\r\n", "10000\r\n" + std::string(65536, 'z') + "XX"));
    ASSERT_EQ(p.state(), State::kFailed);
    EXPECT_LE(p.memory(), 64u);
  }
}

TEST(ServeHttpParser, FailureStopsConsuming) {
  RequestParser p(small_limits());
  const std::string bad = "GET / HTTP/1.1\nHost: x\r\n\r\n";
  EXPECT_EQ(p.feed(bad), bad.find('\n'));
  EXPECT_EQ(p.state(), State::kFailed);
  EXPECT_EQ(p.error_status(), 400);
  EXPECT_EQ(p.feed("GET / HTTP/1.1\r\n"), 0u);
  p.reset();
  p.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(p.state(), State::kDone);
}

TEST(ServeHttpParser, RequestLineKeptForTheLogWhenTheHeadIsRefused) {
  RequestParser p(small_limits());
  p.feed(post("Content-Encoding: gzip\r\nContent-Length: 5\r\n"));
  EXPECT_EQ(p.error_status(), 415);
  EXPECT_EQ(p.request().method, "POST");
  EXPECT_EQ(p.request().path, "/v1/classify");
}

}  // namespace
}  // namespace fastnn::serve
