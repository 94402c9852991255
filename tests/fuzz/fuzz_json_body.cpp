// Fuzzes the {"base64_string": [...]} body reader of `fastnn serve` (trainer/serve/base64_json.h) over
// arbitrary bytes, against nlohmann's document parser as the oracle: whatever the document parser reads
// as an object whose "base64_string" is a non-empty list of strings (or a string), at most 4 of them,
// nested at most kMaxJsonDepth deep, must give exactly those strings; everything else, and any body with
// two "base64_string" members, must be refused with 400 (or 413 once 4 strings were handed out and a
// fifth came: the reader stops there, before any later syntax error); only RequestError may escape.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/serve/base64_json.h"
#include "trainer/serve/http_message.h"

namespace {

constexpr size_t kMax = 4;

void check(bool ok) {
  if (!ok) std::abort();
}

size_t depth(const nlohmann::json& j) {
  size_t d = 0;
  if (j.is_structured())
    for (const auto& v : j) d = std::max(d, depth(v));
  return j.is_structured() ? d + 1 : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> got;
  int status = 200;
  std::string message;
  try {
    fastnn::serve::for_each_base64_string(body, kMax, [&](size_t i, std::string& s) {
      check(i == got.size() && i < kMax);
      got.push_back(s);
    });
  } catch (const fastnn::serve::RequestError& e) {
    status = e.status();
    message = e.what();
    check((status == 400 || status == 413) && !message.empty());
  }

  // Two "base64_string" members are refused whatever their values (the document parser would keep the
  // last one silently); the reader may name either the duplicate or a fault in the first value.
  size_t members = 0;
  const auto count_members = [&](int level, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (level == 1 && event == nlohmann::json::parse_event_t::key && parsed == "base64_string") ++members;
    return true;
  };
  const nlohmann::json doc = nlohmann::json::parse(body, count_members, false);
  // The reader stops at the first string over the bound, before it could see what follows is not JSON.
  const bool stopped_at_bound = status == 413 && got.size() == kMax;
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("base64_string") || members > 1)
    return check(status == 400 || stopped_at_bound), 0;
  nlohmann::json list = doc["base64_string"];
  if (list.is_string()) list = nlohmann::json::array({list});
  const bool strings = list.is_array() && !list.empty() &&
                       std::all_of(list.begin(), list.end(), [](const nlohmann::json& v) { return v.is_string(); });
  if (!strings || depth(doc) > fastnn::serve::kMaxJsonDepth) return check(status == 400 || stopped_at_bound), 0;
  if (list.size() > kMax) return check(status == 413), 0;
  check(status == 200 && got.size() == list.size());
  for (size_t i = 0; i < got.size(); ++i) check(got[i] == list[i].get<std::string>());
  return 0;
}
