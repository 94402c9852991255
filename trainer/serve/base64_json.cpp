#include "trainer/serve/base64_json.h"

#include <nlohmann/json.hpp>

#include "trainer/serve/http_message.h"

namespace fastnn::serve {
namespace {

using json = nlohmann::json;
constexpr const char* kShape = "the JSON body must be an object with \"base64_string\": [\"<base64 image>\", ...]";

// SAX events → calls of `each`. Returning false stops the parse; `status`/`message` say why.
class Base64Sax {
 public:
  Base64Sax(size_t max_strings, const std::function<void(size_t, std::string&)>& each) : max_(max_strings), each_(each) {}

  bool null() { return scalar(); }
  bool boolean(bool) { return scalar(); }
  bool number_integer(json::number_integer_t) { return scalar(); }
  bool number_unsigned(json::number_unsigned_t) { return scalar(); }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar(); }
  bool binary(json::binary_t&) { return scalar(); }

  bool string(json::string_t& s) {
    if (depth_ == 0) return refuse(400, kShape);
    if (!(ours_ && depth_ == 1) && !(in_list_ && depth_ == 2)) return true;
    ours_ = false;
    if (count_ == max_)
      return refuse(413, str("\"base64_string\" holds more than ", max_, " images; at most ", max_, " per request"));
    each_(count_++, s);
    return true;
  }

  bool start_object(size_t) {
    if (depth_ == 0) seen_root_ = true;
    return open(false);
  }
  bool start_array(size_t) {
    if (depth_ == 0) return refuse(400, kShape);
    return open(true);
  }
  bool end_object() { return close(); }
  bool end_array() {
    if (in_list_ && depth_ == 2) in_list_ = false;
    return close();
  }

  bool key(json::string_t& k) {
    ours_ = depth_ == 1 && k == "base64_string";
    if (ours_ && found_) return refuse(400, "more than one \"base64_string\" member");
    found_ = found_ || ours_;
    return true;
  }

  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    return refuse(400, str("invalid JSON: ", e.what()));
  }

  // After a parse that did not stop early.
  void finish() const {
    if (!seen_root_ || !found_) throw RequestError(400, kShape);
    if (count_ == 0) throw RequestError(400, "\"base64_string\" holds no image");
  }
  int status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  bool scalar() {
    if (depth_ == 0) return refuse(400, kShape);
    if (ours_ && depth_ == 1) return refuse(400, "\"base64_string\" must be a list of strings");
    if (in_list_ && depth_ == 2) return refuse(400, str("base64_string[", count_, "] is not a string"));
    return true;
  }
  bool open(bool array) {
    if (ours_ && depth_ == 1 && !array) return refuse(400, "\"base64_string\" must be a list of strings");
    if (in_list_ && depth_ == 2) return refuse(400, str("base64_string[", count_, "] is not a string"));
    in_list_ = in_list_ || (ours_ && depth_ == 1);
    ours_ = false;
    if (++depth_ > kMaxJsonDepth) return refuse(400, str("the JSON body is nested deeper than ", kMaxJsonDepth, " levels"));
    return true;
  }
  bool close() {
    --depth_;
    ours_ = false;
    return true;
  }
  bool refuse(int status, std::string message) {
    if (status_ == 0) {
      status_ = status;
      message_ = std::move(message);
    }
    return false;
  }

  size_t max_, count_ = 0, depth_ = 0;
  const std::function<void(size_t, std::string&)>& each_;
  bool seen_root_ = false, found_ = false, ours_ = false, in_list_ = false;
  int status_ = 0;
  std::string message_;
};

}  // namespace

void for_each_base64_string(std::string_view body, size_t max_strings,
                            const std::function<void(size_t index, std::string& value)>& each) {
  Base64Sax sax(max_strings, each);
  if (!json::sax_parse(body.begin(), body.end(), &sax)) {
    if (sax.status() != 0) throw RequestError(sax.status(), sax.message());
    throw RequestError(400, "invalid JSON");
  }
  sax.finish();
}

}  // namespace fastnn::serve
