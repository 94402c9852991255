#include "trainer/config/config_fields.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/check.h"
#include "schemas/job_config.pb.h"

namespace fastnn {

std::string field_help(const FieldDescriptor& field) { return field.options().GetExtension(help); }

std::vector<std::string> field_choices(const FieldDescriptor& field) {
  const auto& opts = field.options();
  std::vector<std::string> out;
  for (int i = 0; i < opts.ExtensionSize(choices); ++i) out.push_back(opts.GetExtension(choices, i));
  return out;
}

std::string field_section(const FieldDescriptor& field) { return field.options().GetExtension(section); }

std::vector<std::string> field_aliases(const FieldDescriptor& field) {
  const auto& opts = field.options();
  std::vector<std::string> out;
  for (int i = 0; i < opts.ExtensionSize(alias); ++i) out.push_back(opts.GetExtension(alias, i));
  return out;
}

std::string field_complement_alias(const FieldDescriptor& field) {
  return field.options().GetExtension(complement_alias);
}

FieldByName find_field(const Descriptor& type, std::string_view name) {
  const std::string n(name);
  if (const FieldDescriptor* f = type.FindFieldByName(n)) return {f, false};
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor* f = type.field(i);
    for (const std::string& a : field_aliases(*f))
      if (a == n) return {f, false};
    if (field_complement_alias(*f) == n) return {f, true};
  }
  return {};
}

std::string field_type_name(const FieldDescriptor& field) {
  std::string base;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: base = "int"; break;
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE: base = "float"; break;
    case FieldDescriptor::CPPTYPE_BOOL: base = "bool"; break;
    case FieldDescriptor::CPPTYPE_STRING: base = "string"; break;
    case FieldDescriptor::CPPTYPE_ENUM: base = "enum"; break;
    case FieldDescriptor::CPPTYPE_MESSAGE: base = "message"; break;
  }
  return field.is_repeated() ? base + " list" : base;
}

namespace {

// Shortest text that reads back as the same double, in plain notation unless very large or small
// (0.00004 rather than 4e-05: that is how FastNN's flags are written).
std::string format_double(double v) {
  char buf[64];
  const bool plain = v == 0.0 || (std::fabs(v) >= 1e-6 && std::fabs(v) < 1e15);
  auto res = plain ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                   : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::string field_default_text(const FieldDescriptor& field) {
  if (field.options().HasExtension(default_text)) return field.options().GetExtension(default_text);
  if (field.is_repeated()) return "[]";
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return std::to_string(field.default_value_int32());
    case FieldDescriptor::CPPTYPE_INT64: return std::to_string(field.default_value_int64());
    case FieldDescriptor::CPPTYPE_UINT32: return std::to_string(field.default_value_uint32());
    case FieldDescriptor::CPPTYPE_UINT64: return std::to_string(field.default_value_uint64());
    case FieldDescriptor::CPPTYPE_FLOAT: return format_double(field.default_value_float());
    case FieldDescriptor::CPPTYPE_DOUBLE: return format_double(field.default_value_double());
    case FieldDescriptor::CPPTYPE_BOOL: return field.default_value_bool() ? "true" : "false";
    case FieldDescriptor::CPPTYPE_STRING: return quote(field.default_value_string());
    case FieldDescriptor::CPPTYPE_ENUM: return field.default_value_enum()->name();
    case FieldDescriptor::CPPTYPE_MESSAGE: return "{}";
  }
  return "";
}

std::string format_choices(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& c : values) {
    if (!out.empty()) out += ", ";
    out += c.empty() ? "\"\"" : c;
  }
  return out;
}

namespace {

char fold(char c) {
  if (c == '-') return '_';
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Edit distance counting a swap of two neighbouring letters as one edit ("trian" is one from "train"),
// case-insensitive, '-' equal to '_' (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  for (size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = d[(i - 1) * w + j - 1] + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1);
      size_t best = std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, subst});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        best = std::min(best, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = best;
    }
  return d[a.size() * w + b.size()];
}

std::string folded(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = fold(c);
  return out;
}

}  // namespace

std::vector<std::string> closest_names(std::span<const std::string> candidates, std::string_view name,
                                       size_t max_results) {
  const size_t threshold = std::clamp<size_t>(name.size() / 3, 1, 3);
  const std::string needle = folded(name);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    const std::string hay = folded(candidate);
    const bool contains = needle.size() >= 3 && (hay.find(needle) != std::string::npos ||
                                                 (hay.size() >= 3 && needle.find(hay) != std::string::npos));
    if (d <= threshold || contains) scored.emplace_back(d, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max_results; ++i) out.push_back(scored[i].second);
  return out;
}

std::vector<std::string> closest_field_names(const Descriptor& type, std::string_view name, size_t max_results) {
  std::vector<std::string> names;
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& f = *type.field(i);
    names.push_back(f.name());
    for (std::string& a : field_aliases(f)) names.push_back(std::move(a));
    if (std::string c = field_complement_alias(f); !c.empty()) names.push_back(std::move(c));
  }
  return closest_names(names, name, max_results);
}

namespace {

// Greedy word wrap of `text` at `width` columns, every line prefixed with `indent`.
void wrap(std::ostringstream& os, const std::string& text, const std::string& indent, size_t width) {
  std::istringstream words(text);
  std::string word, line;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      os << indent << line << "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) os << indent << line << "\n";
}

std::string escape_markdown_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// "Also --train_dir, --output; --bn_momentum (1 - the value)." or "".
std::string aliases_text(const FieldDescriptor& f) {
  std::string out;
  for (const std::string& a : field_aliases(f)) out += (out.empty() ? "" : ", ") + std::string("--") + a;
  if (const std::string c = field_complement_alias(f); !c.empty())
    out += (out.empty() ? "" : "; ") + str("--", c, " (1 - the value)");
  return out.empty() ? out : "Also " + out + ".";
}

std::string markdown_row(const FieldDescriptor& f) {
  std::string meaning = field_help(f);
  const std::vector<std::string> ch = field_choices(f);
  if (!ch.empty()) meaning += " One of: " + format_choices(ch) + ".";
  if (const std::string a = aliases_text(f); !a.empty()) meaning += " " + a;
  return "| `" + f.name() + "` | " + field_type_name(f) + " | " + escape_markdown_cell(field_default_text(f)) +
         " | " + escape_markdown_cell(meaning) + " |";
}

}  // namespace

std::string format_config_help(const Descriptor& type) {
  std::ostringstream os;
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& f = *type.field(i);
    if (const std::string s = field_section(f); !s.empty()) os << (i == 0 ? "" : "\n") << s << ":\n";
    os << "  --" << f.name() << "=<" << field_type_name(f) << ">   default " << field_default_text(f) << "\n";
    wrap(os, field_help(f), "      ", 100);
    if (const auto ch = field_choices(f); !ch.empty()) wrap(os, "One of: " + format_choices(ch), "      ", 100);
    if (const std::string a = aliases_text(f); !a.empty()) wrap(os, a, "      ", 100);
  }
  return os.str();
}

std::vector<std::string> config_markdown_rows(const Descriptor& type) {
  std::vector<std::string> rows;
  for (int i = 0; i < type.field_count(); ++i) rows.push_back(markdown_row(*type.field(i)));
  return rows;
}

std::string config_fields_markdown(const Descriptor& type) {
  std::ostringstream os;
  const std::vector<std::string> rows = config_markdown_rows(type);
  for (int i = 0; i < type.field_count(); ++i) {
    const std::string s = field_section(*type.field(i));
    if (!s.empty() || i == 0) {
      os << (i == 0 ? "" : "\n") << "### " << (s.empty() ? "Fields" : s) << "\n\n"
         << "| name | type | default | meaning |\n|---|---|---|---|\n";
    }
    os << rows[static_cast<size_t>(i)] << "\n";
  }
  return os.str();
}

namespace {

// One field of `m` as protobuf text; repeated fields as "[a, b]".
std::string field_text(const google::protobuf::Message& m, const google::protobuf::FieldDescriptor* f) {
  const auto* refl = m.GetReflection();
  std::string out, v;
  if (!f->is_repeated()) {
    google::protobuf::TextFormat::PrintFieldValueToString(m, f, -1, &out);
    return out;
  }
  out = "[";
  for (int i = 0; i < refl->FieldSize(m, f); ++i) {
    google::protobuf::TextFormat::PrintFieldValueToString(m, f, i, &v);
    out += (i ? ", " : "") + v;
  }
  return out + "]";
}

}  // namespace

std::map<std::string, std::string> config_field_values(const google::protobuf::Message& config,
                                                       const std::set<std::string>& excluded) {
  std::map<std::string, std::string> out;
  const auto* d = config.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (!excluded.contains(std::string(f->name()))) out[std::string(f->name())] = field_text(config, f);
  }
  return out;
}

}  // namespace fastnn
