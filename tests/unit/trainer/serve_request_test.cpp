// serve: request bodies (content types, PLSC's base64_string JSON, the checks and their statuses) and
// the JSON answers (classify like predict's lines, PLSC's embed shape, error bodies).
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/example.h"
#include "trainer/serve/answers.h"
#include "trainer/serve/request.h"

namespace fastnn::serve {
namespace {

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + "rest of a png";
const std::string kJpeg = std::string("\xff\xd8\xff\xe0", 4) + "rest of a jpeg";

int status_of(std::string_view type, std::string_view body, size_t max_images = 16) {
  try {
    parse_images(type, body, max_images);
  } catch (const RequestError& e) {
    return e.status();
  }
  return 200;
}

TEST(ServeRequest, MediaType) {
  EXPECT_EQ(media_type("image/JPEG"), "image/jpeg");
  EXPECT_EQ(media_type("application/json; charset=utf-8"), "application/json");
  EXPECT_EQ(media_type(" image/png ;q=1"), "image/png");
  EXPECT_EQ(media_type(""), "");
}

TEST(ServeRequest, RawImageBodies) {
  for (const char* type : {"image/png", "image/jpeg", "application/octet-stream", "Image/PNG; x=y"}) {
    const auto items = parse_images(type, kPng, 16);
    ASSERT_EQ(items.size(), 1u) << type;
    EXPECT_EQ(items[0].path, "0");
    EXPECT_EQ(items[0].bytes, inference::image_example(kPng));  // what predict makes of an image file
  }
  // The declared type does not have to match the bytes: the bytes are sniffed, as predict does.
  EXPECT_EQ(parse_images("image/png", kJpeg, 16)[0].bytes, inference::image_example(kJpeg));
}

TEST(ServeRequest, Base64Json) {
  const std::string body = nlohmann::json{{"base64_string", {base64_encode(kPng), base64_encode(kJpeg)}}, {"other", 1}}.dump();
  const auto items = parse_images("application/json", body, 16);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].path, "0");
  EXPECT_EQ(items[1].path, "1");
  EXPECT_EQ(items[0].bytes, inference::image_example(kPng));
  EXPECT_EQ(items[1].bytes, inference::image_example(kJpeg));
  const auto one = parse_images("application/json", nlohmann::json{{"base64_string", base64_encode(kPng)}}.dump(), 16);
  ASSERT_EQ(one.size(), 1u);
}

TEST(ServeRequest, StatusCodes) {
  EXPECT_EQ(status_of("text/plain", kPng), 415);
  EXPECT_EQ(status_of("", kPng), 415);
  EXPECT_EQ(status_of("multipart/form-data; boundary=x", kPng), 415);
  EXPECT_EQ(status_of("image/png", ""), 400);
  EXPECT_EQ(status_of("image/png", "hello, not an image"), 400);
  EXPECT_EQ(status_of("image/jpeg", kPng.substr(0, 4)), 400);  // too short for the PNG signature
  EXPECT_EQ(status_of("application/json", "{\"base64_string\": ["), 400);
  EXPECT_EQ(status_of("application/json", "[1, 2]"), 400);
  EXPECT_EQ(status_of("application/json", "{\"images\": []}"), 400);
  EXPECT_EQ(status_of("application/json", "{\"base64_string\": []}"), 400);
  EXPECT_EQ(status_of("application/json", "{\"base64_string\": [7]}"), 400);
  EXPECT_EQ(status_of("application/json", "{\"base64_string\": {\"a\": 1}}"), 400);
  EXPECT_EQ(status_of("application/json", "{\"base64_string\": [\"@@@@\"]}"), 400);
  EXPECT_EQ(status_of("application/json", nlohmann::json{{"base64_string", {base64_encode("plain text")}}}.dump()), 400);
  const std::string three = nlohmann::json{{"base64_string", {base64_encode(kPng), base64_encode(kPng), base64_encode(kPng)}}}.dump();
  EXPECT_EQ(status_of("application/json", three, 2), 413);
  EXPECT_EQ(status_of("application/json", three, 3), 200);
}

TEST(ServeRequest, ErrorsNameTheImage) {
  const std::string body = nlohmann::json{{"base64_string", {base64_encode(kPng), "AAA"}}}.dump();
  try {
    parse_images("application/json", body, 16);
    FAIL() << "accepted bad base64";
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("base64_string[1]"), std::string::npos) << e.what();
  }
}

Outcome outcome(int label, std::vector<float> embedding = {}) {
  Outcome o;
  o.done = true;
  o.prediction.topk = {{label, 0.75}, {1 - label, 0.25}};
  o.prediction.embedding = std::move(embedding);
  return o;
}

TEST(ServeAnswers, ClassifyHasPredictsFields) {
  const std::vector<Outcome> outs = {outcome(1), outcome(0)};
  const nlohmann::json j = nlohmann::json::parse(classify_json(outs, {"cat", "dog"}));
  ASSERT_EQ(j["predictions"].size(), 2u);
  EXPECT_EQ(j["predictions"][0].dump(), R"({"label":1,"name":"dog","source":0,"topk":[[1,0.75],[0,0.25]]})");
  EXPECT_EQ(j["predictions"][1]["source"], 1);
  EXPECT_EQ(j["predictions"][1]["name"], "cat");
  EXPECT_FALSE(nlohmann::json::parse(classify_json(outs, {}))["predictions"][0].contains("name"));
}

TEST(ServeAnswers, EmbedIsPlscShapeAndRoundTrips) {
  const std::vector<float> e = {0.1f, -3.4028235e38f, 1.17549435e-38f, 0.0f, 123456.789f};
  const std::vector<Outcome> outs = {outcome(0, e), outcome(1, {2.5f})};
  const nlohmann::json j = nlohmann::json::parse(embed_json(outs));
  ASSERT_EQ(j["instance"].size(), 2u);
  const auto back = j["instance"][0]["embedding"].get<std::vector<double>>();
  ASSERT_EQ(back.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(static_cast<float>(back[i]), e[i]) << i;
  EXPECT_EQ(j["instance"][1]["embedding"][0], 2.5);
}

TEST(ServeAnswers, ModelAndError) {
  inference::ModelInfo m;
  m.model_name = "lenet";
  m.num_classes = 10;
  m.height = m.width = 28;
  m.channels = 1;
  m.input_layout = "NCHW";
  m.preset = "lenet";
  m.embedding_layer = "LeNet/fc3/Relu";
  m.embedding_size = 1024;
  m.forward_batch = 4;
  const nlohmann::json j = nlohmann::json::parse(model_json(m, {.max_batch = 8, .max_delay = std::chrono::microseconds(1500)}));
  EXPECT_EQ(j["model_name"], "lenet");
  EXPECT_EQ(j["num_classes"], 10);
  EXPECT_EQ(j["input"]["height"], 28);
  EXPECT_EQ(j["input"]["layout"], "NCHW");
  EXPECT_EQ(j["embedding"]["size"], 1024);
  EXPECT_EQ(j["batching"]["max_batch"], 8);
  EXPECT_EQ(j["batching"]["forward_batch"], 4);
  EXPECT_DOUBLE_EQ(j["batching"]["max_delay_ms"].get<double>(), 1.5);
  EXPECT_EQ(nlohmann::json::parse(error_json("bad \"x\"\n"))["error"], "bad \"x\"\n");
}

}  // namespace
}  // namespace fastnn::serve
