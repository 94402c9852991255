#include "trainer/serve/request.h"

#include <algorithm>
#include <cctype>

#include "core/ascii.h"
#include "core/base64.h"
#include "core/image.h"
#include "trainer/serve/base64_json.h"

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
  std::vector<inference::InputItem> items;
  // Each string is decoded as it is read, so the body's text and its decoded images are never all held twice.
  for_each_base64_string(body, max_images, [&items](size_t i, std::string& b64) {
    const std::string what = str("base64_string[", i, "]");
    std::string bytes;
    try {
      bytes = base64_decode(b64);
    } catch (const Error& e) {
      throw RequestError(400, str(what, ": ", e.what()));
    }
    items.push_back(image_item(std::move(bytes), i, what));
  });
  return items;
}

}  // namespace

std::string media_type(std::string_view content_type) {
  std::string m(content_type.substr(0, std::min(content_type.find(';'), content_type.size())));
  m.erase(std::remove_if(m.begin(), m.end(), [](unsigned char c) { return std::isspace(c); }), m.end());
  return ascii_lower(m);
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
