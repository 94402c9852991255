#include "trainer/config/overrides.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include "core/ascii.h"
#include "core/check.h"
#include "core/comma_list.h"
#include "trainer/config/config_fields.h"

namespace fastnn {

using google::protobuf::Message;
using google::protobuf::Reflection;

namespace {

[[noreturn]] void unknown_flag(const Descriptor& type, std::string_view name) {
  std::string msg = str("unknown flag --", name);
  const std::vector<std::string> near = closest_field_names(type, name);
  if (!near.empty()) {
    msg += "; did you mean ";
    for (size_t i = 0; i < near.size(); ++i) {
      msg += (i == 0 ? "" : (i + 1 == near.size() ? " or " : ", ")) + std::string("--") + near[i];
    }
    msg += "?";
  }
  msg += " (`fastnn train --help` lists every field)";
  throw UsageError(msg);
}

[[noreturn]] void bad_value(const FieldDescriptor& f, std::string_view value, const std::string& why) {
  throw UsageError(str("--", f.name(), "=", value, ": ", f.name(), " is ",
                        field_type_name(f).starts_with("int") ? "an " : "a ", field_type_name(f), "; ", why));
}

bool parse_int64(std::string_view text, int64_t* out) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  const auto res = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && res.ec == std::errc() && res.ptr == text.data() + text.size();
}

bool parse_uint64(std::string_view text, uint64_t* out) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  const auto res = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && res.ec == std::errc() && res.ptr == text.data() + text.size();
}

bool parse_double(std::string_view text, double* out) {
  const std::string s(text);
  if (s.empty() || s[0] == ' ') return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

bool parse_bool(std::string_view text, bool* out) {
  const std::string t = ascii_lower(text);
  if (t == "true" || t == "1") return *out = true, true;
  if (t == "false" || t == "0") return *out = false, true;
  return false;
}

// Parses one value (one element of a repeated field) and stores it, appending when repeated.
// `shown` is the whole flag value, for messages.
void store(Message& msg, const FieldDescriptor& f, std::string_view text, std::string_view shown,
           const std::string& element) {
  const Reflection& r = *msg.GetReflection();
  const bool rep = f.is_repeated();
  const std::string what = element.empty() ? str("\"", text, "\"") : str(element, " \"", text, "\"");
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int64_t v;
      if (!parse_int64(text, &v)) bad_value(f, shown, what + " is not an integer");
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        bad_value(f, shown, what + " is out of the 32-bit range");
      }
      rep ? r.AddInt32(&msg, &f, static_cast<int32_t>(v)) : r.SetInt32(&msg, &f, static_cast<int32_t>(v));
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!parse_int64(text, &v)) bad_value(f, shown, what + " is not a 64-bit integer");
      rep ? r.AddInt64(&msg, &f, v) : r.SetInt64(&msg, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint64_t v;
      if (!parse_uint64(text, &v) || v > std::numeric_limits<uint32_t>::max()) {
        bad_value(f, shown, what + " is not an unsigned 32-bit integer");
      }
      rep ? r.AddUInt32(&msg, &f, static_cast<uint32_t>(v)) : r.SetUInt32(&msg, &f, static_cast<uint32_t>(v));
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!parse_uint64(text, &v)) bad_value(f, shown, what + " is not an unsigned integer");
      rep ? r.AddUInt64(&msg, &f, v) : r.SetUInt64(&msg, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v;
      if (!parse_double(text, &v)) bad_value(f, shown, what + " is not a number");
      if (f.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        rep ? r.AddDouble(&msg, &f, v) : r.SetDouble(&msg, &f, v);
      } else {
        rep ? r.AddFloat(&msg, &f, static_cast<float>(v)) : r.SetFloat(&msg, &f, static_cast<float>(v));
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (!parse_bool(text, &v)) bad_value(f, shown, what + " is not true, false, 1 or 0");
      rep ? r.AddBool(&msg, &f, v) : r.SetBool(&msg, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      const std::vector<std::string> valid = field_choices(f);
      if (!valid.empty() && std::find(valid.begin(), valid.end(), text) == valid.end()) {
        throw UsageError(str("--", f.name(), "=", shown, ": ", f.name(), " must be one of: ",
                             format_choices(valid)));
      }
      rep ? r.AddString(&msg, &f, std::string(text)) : r.SetString(&msg, &f, std::string(text));
      break;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* v = f.enum_type()->FindValueByName(std::string(text));
      if (v == nullptr) {
        std::vector<std::string> names;
        for (int i = 0; i < f.enum_type()->value_count(); ++i) names.push_back(f.enum_type()->value(i)->name());
        throw UsageError(str("--", f.name(), "=", shown, ": ", f.name(), " must be one of: ", format_choices(names)));
      }
      rep ? r.AddEnum(&msg, &f, v) : r.SetEnum(&msg, &f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      throw ConfigError(str("--", f.name(), ": ", f.name(),
                            " is a message; set it in the config file, not on the command line"));
  }
}

}  // namespace

void set_field_from_text(Message& msg, std::string_view name, std::string_view value) {
  const Descriptor& type = *msg.GetDescriptor();
  const FieldByName found = find_field(type, name);  // the field's name or an alias (--train_dir)
  const FieldDescriptor* f = found.field;
  if (f == nullptr) unknown_flag(type, name);
  if (found.complement) {  // --bn_momentum=0.01 is batch_norm_decay=0.99
    double v;
    if (!parse_double(value, &v) || !(v >= 0 && v <= 1))
      throw UsageError(str("--", name, "=", value, ": ", name, " is a number in [0, 1] (it sets ", f->name(), " to 1 - it)"));
    msg.GetReflection()->SetDouble(&msg, f, 1.0 - v);
    return;
  }
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) store(msg, *f, value, value, "");
  const Reflection& r = *msg.GetReflection();
  if (!f->is_repeated()) {
    // An empty value resets a scalar to unset (its default), except where "" is a valid string.
    const bool empty_is_value = f->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
    if (value.empty() && !empty_is_value) {
      r.ClearField(&msg, f);
      return;
    }
    store(msg, *f, value, value, "");
    return;
  }
  // Parse into a scratch copy first so that a bad element leaves the field unchanged.
  std::unique_ptr<Message> scratch(msg.New());
  const FieldDescriptor* sf = scratch->GetDescriptor()->field(f->index());
  if (!value.empty()) {
    size_t index = 1;
    for (std::string_view item : split_commas(value))
      store(*scratch, *sf, std::string(trim_blanks(item)), value, str("element ", index++));
  }
  r.SwapFields(&msg, scratch.get(), {f});  // same message type: the parsed list replaces the old one
}

void apply_overrides(Message& msg, std::span<const std::string> args) {
  const Descriptor& type = *msg.GetDescriptor();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a[0] != '-' || a[1] != '-') {
      throw UsageError(str("unexpected argument '", a, "': config overrides are written --name=value"));
    }
    // --batch-size and --batch_size are one flag (field names have no '-'; the value keeps its own).
    std::string spelled = a.substr(2);
    const size_t eq = spelled.find('=');
    std::replace(spelled.begin(), eq == std::string::npos ? spelled.end() : spelled.begin() + static_cast<std::ptrdiff_t>(eq),
                 '-', '_');
    const std::string_view body = spelled;
    if (eq != std::string_view::npos) {
      set_field_from_text(msg, body.substr(0, eq), body.substr(eq + 1));
      continue;
    }
    const FieldByName found = find_field(type, body);
    const FieldDescriptor* f = found.complement ? nullptr : found.field;
    if (f != nullptr && f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL && !f->is_repeated()) {
      msg.GetReflection()->SetBool(&msg, f, true);
      continue;
    }
    if (f == nullptr && body.starts_with("no")) {
      const FieldDescriptor* neg = find_field(type, body.substr(body.starts_with("no_") ? 3 : 2)).field;
      if (neg != nullptr && neg->cpp_type() == FieldDescriptor::CPPTYPE_BOOL && !neg->is_repeated()) {
        msg.GetReflection()->SetBool(&msg, neg, false);
        continue;
      }
    }
    if (f == nullptr && found.field == nullptr) unknown_flag(type, body);
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) {
      throw UsageError(str("--", body, " needs a value: --", body, "=<", field_type_name(*found.field), ">"));
    }
    set_field_from_text(msg, body, args[++i]);
  }
}

}  // namespace fastnn
