// serve: the {"base64_string": [...]} body read without a document tree (trainer/serve/base64_json.h):
// the strings in order, everything else skipped, nesting and count bounds, every refusal's status.
#include <chrono>

#include <gtest/gtest.h>

#include "trainer/serve/base64_json.h"
#include "trainer/serve/http_message.h"

namespace fastnn::serve {
namespace {

std::vector<std::string> strings(std::string_view body, size_t max = 16) {
  std::vector<std::string> out;
  for_each_base64_string(body, max, [&](size_t i, std::string& s) {
    EXPECT_EQ(i, out.size());
    out.push_back(std::move(s));
  });
  return out;
}

int status_of(std::string_view body, size_t max = 16) {
  try {
    strings(body, max);
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()), "");
    return e.status();
  }
  return 200;
}

std::string nested(size_t depth) {  // {"a": [[...]]} with `depth` levels in all
  return "{\"base64_string\": [\"QQ==\"], \"a\": " + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

TEST(ServeBase64Json, StringsInOrderOthersSkipped) {
  EXPECT_EQ(strings(R"({"base64_string": ["QQ==", "Qg=="]})"), (std::vector<std::string>{"QQ==", "Qg=="}));
  EXPECT_EQ(strings(R"({"base64_string": "QQ=="})"), std::vector<std::string>{"QQ=="});
  EXPECT_EQ(strings(R"({"before": {"base64_string": ["no"], "x": [1, {"y": null}]}, "base64_string": ["a", "b"],
                        "after": [true, false, 1.5, -3, "s"]})"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(strings(" \n{\"base64_string\":[\"\\u0041\\n\"]}\t"), std::vector<std::string>{"A\n"});
}

TEST(ServeBase64Json, Shape) {
  EXPECT_EQ(status_of(R"({"images": ["QQ=="]})"), 400);
  EXPECT_EQ(status_of(R"({"x": {"base64_string": ["QQ=="]}})"), 400);  // only a member of the body counts
  EXPECT_EQ(status_of(R"({"base64_string": []})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": 5})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": null})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": {"a": "QQ=="}})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": ["QQ==", 7]})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": ["QQ==", ["QQ=="]]})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": [{"a": 1}]})"), 400);
  EXPECT_EQ(status_of(R"({"base64_string": ["QQ=="], "base64_string": ["Qg=="]})"), 400);
  EXPECT_EQ(status_of(R"(["QQ=="])"), 400);
  EXPECT_EQ(status_of(R"("QQ==")"), 400);
  EXPECT_EQ(status_of("5"), 400);
  EXPECT_EQ(status_of("null"), 400);
  EXPECT_EQ(status_of(""), 400);
  EXPECT_EQ(status_of(R"({"base64_string": ["QQ=="]})" "x"), 400);  // trailing bytes
  EXPECT_EQ(status_of(R"({"base64_string": ["QQ==")"), 400);
  EXPECT_EQ(status_of("{\"base64_string\": [\"\xff\"]}"), 400);  // not UTF-8
}

TEST(ServeBase64Json, ErrorsNameTheElement) {
  try {
    strings(R"({"base64_string": ["QQ==", "Qg==", 3]})");
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("base64_string[2]"), std::string::npos) << e.what();
  }
}

TEST(ServeBase64Json, Depth) {
  EXPECT_EQ(status_of(nested(kMaxJsonDepth)), 200);
  EXPECT_EQ(status_of(nested(kMaxJsonDepth + 1)), 400);
  // 4 MB of '[' (a document tree of it took ~276 MB) is refused at the ninth level, at once.
  const std::string deep(size_t{4} << 20, '[');
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(status_of("{\"a\": " + deep), 400);
  EXPECT_EQ(status_of(deep), 400);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(ServeBase64Json, CountBoundStopsEarly) {
  size_t calls = 0;
  try {
    for_each_base64_string(R"({"base64_string": ["a", "b", "c", "d", "e"]})", 3, [&](size_t, std::string&) { ++calls; });
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_EQ(e.status(), 413);
  }
  EXPECT_EQ(calls, 3u);
  EXPECT_EQ(status_of(R"({"base64_string": ["a", "b", "c"]})", 3), 200);
}

TEST(ServeBase64Json, CallbackExceptionsPropagate) {
  EXPECT_THROW(for_each_base64_string(R"({"base64_string": ["a"]})", 3,
                                      [](size_t, std::string&) { throw RequestError(418, "mine"); }),
               RequestError);
}

}  // namespace
}  // namespace fastnn::serve
