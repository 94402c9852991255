// The strings of a {"base64_string": [...]} JSON body (PaddlePaddle PLSC's request field), read as a
// stream of parser events (nlohmann's SAX interface): no document tree is built, so a body costs its own
// bytes plus one string at a time, whatever its shape. A tree of 4 MB of "[" used ~276 MB.
//
// The body must be a JSON object; its member "base64_string" is a list of strings or one string (a list
// of one); other members are skipped unread, nested at most kMaxJsonDepth levels deep (the body is
// level 1). `each(index, value)` is called once per string in order, while parsing; it may move the
// value out or throw (its exception propagates).
// RequestError statuses: 400 invalid JSON, nesting deeper than kMaxJsonDepth, a body that is not an
// object, no or two "base64_string" members, a list element that is not a string, an empty list;
// 413 more than max_strings strings (stopped at the first one over).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace fastnn::serve {

constexpr size_t kMaxJsonDepth = 8;

void for_each_base64_string(std::string_view body, size_t max_strings,
                            const std::function<void(size_t index, std::string& value)>& each);

}  // namespace fastnn::serve
