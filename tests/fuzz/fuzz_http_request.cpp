// Fuzzes `fastnn serve`'s request parser (trainer/serve/http_parser.h) over arbitrary byte streams, as
// a connection would feed it: several requests back to back (pipelining), each complete body read as a
// {"base64_string": [...]} JSON body too. The first byte picks how the stream is split into reads.
// Checked, else abort: the stream split that way and the stream given whole yield the same requests and
// the same refusal; an incomplete request consumes every byte it is given; a refusal's status is one the
// parser documents; bodies stay within max_body_bytes and the parser's memory within its bounds.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/base64.h"
#include "core/check.h"
#include "trainer/serve/base64_json.h"
#include "trainer/serve/http_parser.h"

namespace {

using fastnn::serve::RequestParser;

fastnn::serve::ParserLimits limits() {
  fastnn::serve::ParserLimits l;
  l.max_head_bytes = 2048;
  l.max_target_bytes = 512;
  l.max_headers = 16;
  l.max_body_bytes = 4096;
  return l;
}

void check(bool ok) {
  if (!ok) std::abort();
}

std::string json_outcome(const std::string& body) {
  std::string out;
  try {
    fastnn::serve::for_each_base64_string(body, 8, [&out](size_t i, std::string& s) {
      try {
        out += std::to_string(i) + ":" + std::to_string(fastnn::base64_decode(s).size()) + ",";
      } catch (const fastnn::FormatError&) {
        out += std::to_string(i) + ":bad,";
      }
    });
  } catch (const fastnn::serve::RequestError& e) {
    check(e.status() == 400 || e.status() == 413);
    out += "error " + std::to_string(e.status());
  }
  return out;
}

// One line per request: its fields, or the refusal; the last line says where the stream ended.
std::vector<std::string> run(std::string_view stream, size_t piece) {
  static const std::set<int> statuses = {400, 411, 413, 414, 415, 417, 431, 501, 505};
  const fastnn::serve::ParserLimits l = limits();
  RequestParser p(l);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < stream.size()) {
    const size_t n = piece == 0 ? stream.size() - pos : std::min(piece, stream.size() - pos);
    const size_t used = p.feed(stream.substr(pos, n));
    check(used <= n);
    check(p.memory() <= 2 * l.max_head_bytes + l.max_body_bytes + 4096);
    pos += used;
    if (p.state() == RequestParser::State::kFailed) {
      check(statuses.count(p.error_status()) == 1 && !p.error().empty());
      out.push_back("refused " + std::to_string(p.error_status()));
      return out;
    }
    if (p.state() == RequestParser::State::kDone) {
      const fastnn::serve::HttpRequest r = p.take();
      check(r.body.size() <= l.max_body_bytes && !r.method.empty() && !r.path.empty());
      check(r.target.size() <= l.max_target_bytes && r.headers.size() <= l.max_headers);
      std::string line = r.method + " " + r.target + " " + std::to_string(r.minor_version) + (r.keep_alive ? " ka" : " close") +
                         (r.expect_continue ? " continue " : " ") + std::to_string(r.headers.size()) + " " + r.path + " " + r.body;
      if (!r.body.empty()) line += " json " + json_outcome(r.body);
      out.push_back(line);
      p.reset();
      continue;
    }
    check(used == n);  // an incomplete request takes everything it is given
  }
  out.push_back(p.started() ? "incomplete" : "between requests");
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t piece = data[0] % 17;  // 0: one read of everything
  check(run(stream, piece) == run(stream, 0));
  return 0;
}
