// Op attributes: a small ordered map from name to value (bool, int, float, string, int list or float
// list).
//
// Layers build them from the job config / model zoo; each op parses them into its own params struct
// once, when a kernel is created, so the hot path never looks at strings. Getters convert where it is
// lossless (an int where a float is wanted, one int where a list is wanted) and otherwise throw
// ConfigError naming the op and the attribute. check_known() rejects misspelt attribute names.
//
//   Attrs a{{"filters", 64}, {"kernel", Ints{1, 7}}, {"padding", "same"}, {"bias", false}};
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace fastnn::ops {

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;
using AttrValue = std::variant<bool, int64_t, double, std::string, Ints, Floats>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  Attrs& set(std::string key, AttrValue v) {
    map_.insert_or_assign(std::move(key), std::move(v));
    return *this;
  }
  bool has(std::string_view key) const { return map_.find(key) != map_.end(); }
  const AttrValue* find(std::string_view key) const;

  // `op` names the op in error messages. The one-argument forms require the attribute.
  int64_t get_int(std::string_view op, std::string_view key) const;
  int64_t get_int(std::string_view op, std::string_view key, int64_t dflt) const;
  double get_float(std::string_view op, std::string_view key, double dflt) const;
  bool get_bool(std::string_view op, std::string_view key, bool dflt) const;
  std::string get_string(std::string_view op, std::string_view key, std::string dflt) const;
  // A list; a single int n reads as {n}.
  Ints get_ints(std::string_view op, std::string_view key, Ints dflt) const;
  // A list of exactly `n` ints; a single int or a 1-element list is repeated n times.
  Ints get_ints_n(std::string_view op, std::string_view key, size_t n, int64_t dflt) const;
  // A list of numbers; an int list converts.
  Floats get_floats(std::string_view op, std::string_view key, Floats dflt) const;

  // Throws ConfigError if an attribute is not in `known`.
  void check_known(std::string_view op, std::initializer_list<std::string_view> known) const;

  std::string to_string() const;  // "{bias=false, kernel=[1,7]}"
  const std::map<std::string, AttrValue, std::less<>>& map() const { return map_; }

 private:
  std::map<std::string, AttrValue, std::less<>> map_;
};

}  // namespace fastnn::ops
