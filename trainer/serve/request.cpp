#include "trainer/serve/request.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/image.h"

namespace fastnn::serve {
namespace {

inference::InputItem image_item(std::string bytes, size_t index, const std::string& what) {
  if (bytes.empty()) throw RequestError(400, str(what, " is empty"));
  if (detect_image_format(bytes) == ImageFormat::kUnknown)
    throw RequestError(400, str(what, " is not a JPEG or PNG image (", bytes.size(), " bytes)"));
  inference::InputItem it;
  it.path = std::to_string(index);
  it.bytes = inference::image_example(bytes);
  return it;
}

std::vector<inference::InputItem> parse_json(std::string_view body, size_t max_images) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    throw RequestError(400, str("invalid JSON: ", e.what()));
  }
  if (!j.is_object() || !j.contains("base64_string"))
    throw RequestError(400, "the JSON body must be an object with \"base64_string\": [\"<base64 image>\", ...]");
  nlohmann::json list = j["base64_string"];
  if (list.is_string()) list = nlohmann::json::array({list});
  if (!list.is_array()) throw RequestError(400, "\"base64_string\" must be a list of strings");
  if (list.empty()) throw RequestError(400, "\"base64_string\" holds no image");
  if (list.size() > max_images)
    throw RequestError(413, str("\"base64_string\" holds ", list.size(), " images; at most ", max_images, " per request"));
  std::vector<inference::InputItem> items;
  items.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string what = str("base64_string[", i, "]");
    if (!list[i].is_string()) throw RequestError(400, str(what, " is not a string"));
    const std::string& b64 = list[i].get_ref<const std::string&>();
    std::string bytes;
    try {
      bytes = base64_decode(b64);
    } catch (const Error& e) {
      throw RequestError(400, str(what, ": ", e.what()));
    }
    items.push_back(image_item(std::move(bytes), i, what));
  }
  return items;
}

}  // namespace

std::string media_type(std::string_view content_type) {
  std::string m(content_type.substr(0, std::min(content_type.find(';'), content_type.size())));
  m.erase(std::remove_if(m.begin(), m.end(), [](unsigned char c) { return std::isspace(c); }), m.end());
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return m;
}

std::vector<inference::InputItem> parse_images(std::string_view content_type, std::string_view body, size_t max_images) {
  const std::string m = media_type(content_type);
  if (m == "application/json") return parse_json(body, max_images);
  if (m == "image/jpeg" || m == "image/png" || m == "application/octet-stream") {
    std::vector<inference::InputItem> items;
    items.push_back(image_item(std::string(body), 0, "the body"));
    return items;
  }
  throw RequestError(415, m.empty() ? std::string("no Content-Type: send image/jpeg, image/png, application/octet-stream or application/json")
                                    : str("unsupported Content-Type \"", m,
                                          "\": send image/jpeg, image/png, application/octet-stream or application/json"));
}

}  // namespace fastnn::serve
