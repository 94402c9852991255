#include "trainer/ops/attrs.h"

#include <algorithm>
#include <sstream>

#include "core/check.h"

namespace fastnn::ops {

namespace {

const char* kind(const AttrValue& v) {
  static const char* const names[] = {"bool", "int", "float", "string", "int list", "float list"};
  return names[v.index()];
}

std::string value_str(const AttrValue& v) {
  std::ostringstream os;
  if (auto* b = std::get_if<bool>(&v)) os << (*b ? "true" : "false");
  if (auto* i = std::get_if<int64_t>(&v)) os << *i;
  if (auto* d = std::get_if<double>(&v)) os << *d;
  if (auto* s = std::get_if<std::string>(&v)) os << '"' << *s << '"';
  if (auto* l = std::get_if<Ints>(&v)) {
    os << '[';
    for (size_t k = 0; k < l->size(); ++k) os << (k ? "," : "") << (*l)[k];
    os << ']';
  }
  if (auto* l = std::get_if<Floats>(&v)) {
    os << '[';
    for (size_t k = 0; k < l->size(); ++k) os << (k ? "," : "") << (*l)[k];
    os << ']';
  }
  return os.str();
}

[[noreturn]] void wrong_kind(std::string_view op, std::string_view key, const AttrValue& v, const char* want) {
  throw ConfigError(str(op, ": attribute '", key, "' must be ", want, ", got ", kind(v), " ", value_str(v)));
}

}  // namespace

const AttrValue* Attrs::find(std::string_view key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

int64_t Attrs::get_int(std::string_view op, std::string_view key) const {
  const AttrValue* v = find(key);
  if (!v) throw ConfigError(str(op, ": missing attribute '", key, "'"));
  if (auto* i = std::get_if<int64_t>(v)) return *i;
  wrong_kind(op, key, *v, "an int");
}

int64_t Attrs::get_int(std::string_view op, std::string_view key, int64_t dflt) const {
  return has(key) ? get_int(op, key) : dflt;
}

double Attrs::get_float(std::string_view op, std::string_view key, double dflt) const {
  const AttrValue* v = find(key);
  if (!v) return dflt;
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  wrong_kind(op, key, *v, "a number");
}

bool Attrs::get_bool(std::string_view op, std::string_view key, bool dflt) const {
  const AttrValue* v = find(key);
  if (!v) return dflt;
  if (auto* b = std::get_if<bool>(v)) return *b;
  wrong_kind(op, key, *v, "a bool");
}

std::string Attrs::get_string(std::string_view op, std::string_view key, std::string dflt) const {
  const AttrValue* v = find(key);
  if (!v) return dflt;
  if (auto* s = std::get_if<std::string>(v)) return *s;
  wrong_kind(op, key, *v, "a string");
}

Ints Attrs::get_ints(std::string_view op, std::string_view key, Ints dflt) const {
  const AttrValue* v = find(key);
  if (!v) return dflt;
  if (auto* l = std::get_if<Ints>(v)) return *l;
  if (auto* i = std::get_if<int64_t>(v)) return {*i};
  wrong_kind(op, key, *v, "an int or int list");
}

Ints Attrs::get_ints_n(std::string_view op, std::string_view key, size_t n, int64_t dflt) const {
  Ints l = get_ints(op, key, Ints(n, dflt));
  if (l.size() == 1 && n > 1) l.assign(n, l[0]);
  if (l.size() != n)
    throw ConfigError(str(op, ": attribute '", key, "' needs 1 or ", n, " ints, got ", value_str(AttrValue(l))));
  return l;
}

Floats Attrs::get_floats(std::string_view op, std::string_view key, Floats dflt) const {
  const AttrValue* v = find(key);
  if (!v) return dflt;
  if (auto* l = std::get_if<Floats>(v)) return *l;
  if (auto* l = std::get_if<Ints>(v)) return Floats(l->begin(), l->end());
  wrong_kind(op, key, *v, "a list of numbers");
}

void Attrs::check_known(std::string_view op, std::initializer_list<std::string_view> known) const {
  for (const auto& [k, v] : map_) {
    if (std::find(known.begin(), known.end(), std::string_view(k)) != known.end()) continue;
    std::string list;
    for (auto n : known) list += str(list.empty() ? "" : ", ", n);
    throw ConfigError(str(op, ": unknown attribute '", k, "' (known: ", list, ")"));
  }
}

std::string Attrs::to_string() const {
  std::string s = "{";
  for (const auto& [k, v] : map_) s += str(s.size() > 1 ? ", " : "", k, "=", value_str(v));
  return s + "}";
}

}  // namespace fastnn::ops
