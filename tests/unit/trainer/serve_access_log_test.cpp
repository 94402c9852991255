// serve: the access log's escaping (a client's path cannot forge a line or send a terminal escape) and
// the response serialisation (trainer/serve/access_log.h, http_message.h).
#include <gtest/gtest.h>

#include "trainer/serve/access_log.h"
#include "trainer/serve/http_message.h"

namespace fastnn::serve {
namespace {

using namespace std::string_literals;

TEST(ServeAccessLog, EscapesWhatTheClientSent) {
  EXPECT_EQ(escape_log_field("/v1/classify"), "/v1/classify");
  EXPECT_EQ(escape_log_field("/a\nserve: forged"), "/a\\x0aserve: forged");
  EXPECT_EQ(escape_log_field("/\x1b[31mred"), "/\\x1b[31mred");
  EXPECT_EQ(escape_log_field("/\r\t\0"s), "/\\x0d\\x09\\x00");
  EXPECT_EQ(escape_log_field("/say \"hi\" \\o/"), "/say \\\"hi\\\" \\\\o/");
  EXPECT_EQ(escape_log_field("/\xc3\xa9\x7f\xff"), "/\\xc3\\xa9\\x7f\\xff");
  EXPECT_EQ(escape_log_field(""), "-");
  // Every byte: one line of printable ASCII.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (char c : escape_log_field(all)) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
}

TEST(ServeAccessLog, LineFormat) {
  EXPECT_EQ(access_line("127.0.0.1:5000", "POST", "/v1/classify", 200, 120, 1.5),
            "serve: 127.0.0.1:5000 \"POST /v1/classify\" 200 120 1.500\n");
  EXPECT_EQ(access_line("[::1]:80", "", "", 503, 7, -1), "serve: [::1]:80 \"- -\" 503 7 -\n");
  EXPECT_EQ(access_line("h:1", "GET", "/x\ny", 404, 0, -1), "serve: h:1 \"GET /x\\x0ay\" 404 0 -\n");
}

TEST(ServeAccessLog, JsonLineFormat) {
  EXPECT_EQ(access_json_line("127.0.0.1:5000", "POST", "/v1/classify", 200, 120, 1.5),
            "{\"peer\":\"127.0.0.1:5000\",\"method\":\"POST\",\"path\":\"/v1/classify\",\"status\":200,"
            "\"bytes\":120,\"ms\":1.5}\n");
  EXPECT_EQ(access_json_line("[::1]:80", "", "", 503, 7, -1),
            "{\"peer\":\"[::1]:80\",\"method\":null,\"path\":null,\"status\":503,\"bytes\":7,\"ms\":null}\n");
  // A client's bytes cannot break the line or the JSON: controls escaped, bytes that are not UTF-8 replaced.
  const std::string line = access_json_line("h:1", "GET", std::string("/x\ny\"\xff\x1b", 7), 404, 0, -1);
  EXPECT_EQ(line, "{\"peer\":\"h:1\",\"method\":\"GET\",\"path\":\"/x\\ny\\\"\\ufffd\\u001b\",\"status\":404,\"bytes\":0,"
                  "\"ms\":null}\n");
  for (char c : line.substr(0, line.size() - 1)) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
  EXPECT_EQ(access_entry(AccessLogFormat::kText, "h:1", "GET", "/", 200, 1, 2), access_line("h:1", "GET", "/", 200, 1, 2));
}

TEST(ServeHttpMessage, SerializeResponse) {
  HttpResponse r{503, "application/json", "{\"error\":\"busy\"}", {{"Retry-After", "1"}}};
  EXPECT_EQ(serialize_response(r, false),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 16\r\n"
            "Connection: close\r\nRetry-After: 1\r\n\r\n{\"error\":\"busy\"}");
  EXPECT_EQ(serialize_response({200, "", "", {}}, true), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
  r.headers = {{"X", "a\r\nInjected: 1"}};
  EXPECT_THROW(serialize_response(r, true), Error);
  EXPECT_STREQ(reason_phrase(431), "Request Header Fields Too Large");
  EXPECT_STREQ(reason_phrase(299), "Unknown");
}

TEST(ServeHttpMessage, HeaderLookupTakesTheFirst) {
  HttpRequest req;
  req.headers = {{"a", "1"}, {"b", "2"}, {"a", "3"}};
  ASSERT_NE(req.header("a"), nullptr);
  EXPECT_EQ(*req.header("a"), "1");
  EXPECT_EQ(req.header("c"), nullptr);
}

}  // namespace
}  // namespace fastnn::serve
