#include "core/manifest.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "core/input_file.h"
#include "core/name_escape.h"

namespace fastnn {
namespace {

using nlohmann::json;

bool split_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Consistency rules shared by writing and reading; `where` prefixes messages.
void validate(const Manifest& m, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& msg) {
    throw FormatError(str(where, ": ", field, ": ", msg));
  };
  if (m.format != kManifestFormat) bad("format", str("is \"", m.format, "\", expected \"", kManifestFormat, "\""));
  if (m.version < 1 || m.version > kManifestVersion)
    bad("version", str(m.version, " is not supported (this fastnn reads version ", kManifestVersion, ")"));
  if (m.class_names.empty() || m.num_classes() > kMaxClasses)
    bad("classes", str("needs 1..", kMaxClasses, " class names, has ", m.class_names.size()));
  if (static_cast<int64_t>(m.coarse_class_names.size()) > kMaxClasses) bad("coarse_classes", "too many");
  if (m.num_gpus < 1 || m.shards_per_gpu < 1 || m.num_gpus > kMaxShards || m.shards_per_gpu > kMaxShards ||
      m.num_shards() > kMaxShards)
    bad("num_gpus", str("num_gpus ", m.num_gpus, " × shards_per_gpu ", m.shards_per_gpu, " must be in 1..", kMaxShards));
  if (m.compression != "none" && m.compression != "gzip" && m.compression != "zlib")
    bad("compression", str("\"", m.compression, "\" is not none, gzip or zlib"));
  if (m.remainder != "drop" && m.remainder != "pad") bad("remainder", str("\"", m.remainder, "\" is not drop or pad"));
  if (m.splits.empty()) bad("splits", "no split");
  const size_t nc = m.class_names.size();
  for (size_t si = 0; si < m.splits.size(); ++si) {
    const SplitInfo& s = m.splits[si];
    std::string sp = "splits." + s.name;
    try {
      validate_split_name(s.name);
    } catch (const ConfigError& e) {
      bad(str("splits[", si, "]"), e.what());
    }
    for (size_t sj = 0; sj < si; ++sj)
      if (m.splits[sj].name == s.name) bad(sp, "split listed twice");
    if (static_cast<int64_t>(s.shards.size()) != m.num_shards())
      bad(sp + ".shards", str("has ", s.shards.size(), " shards, num_gpus × shards_per_gpu is ", m.num_shards()));
    if (s.label_histogram.size() != nc)
      bad(sp + ".label_histogram", str("has ", s.label_histogram.size(), " entries for ", nc, " classes"));
    uint64_t total = 0, lo = UINT64_MAX, hi = 0;
    std::vector<uint64_t> hist(nc, 0);
    for (size_t k = 0; k < s.shards.size(); ++k) {
      const ShardInfo& sh = s.shards[k];
      std::string f = str(sp, ".shards[", k, "]");
      std::string expect = shard_file_name(s.name, static_cast<int64_t>(k), m.num_shards());
      if (sh.file != expect) bad(f + ".file", str("is \"", sh.file, "\", expected \"", expect, "\""));
      if (sh.label_histogram.size() != nc)
        bad(f + ".label_histogram", str("has ", sh.label_histogram.size(), " entries for ", nc, " classes"));
      // Counts are untrusted: every sum is checked, so a huge count is an error naming its field,
      // never a wrapped total that happens to match.
      uint64_t sum = 0;
      for (size_t c = 0; c < nc; ++c) {
        if (__builtin_add_overflow(sum, sh.label_histogram[c], &sum) ||
            __builtin_add_overflow(hist[c], sh.label_histogram[c], &hist[c]) || hist[c] > uint64_t{INT64_MAX})
          bad(str(f, ".label_histogram[", c, "]"), "counts add up to more than 2^63");
      }
      if (sum != sh.records) bad(f + ".label_histogram", str("adds up to ", sum, ", records is ", sh.records));
      if (__builtin_add_overflow(total, sh.records, &total) || total > uint64_t{INT64_MAX})
        bad(f + ".records", "the split's record counts add up to more than 2^63");
      lo = std::min(lo, sh.records);
      hi = std::max(hi, sh.records);
    }
    if (total != s.num_records) bad(sp + ".num_records", str("is ", s.num_records, ", the shards hold ", total));
    if (hist != s.label_histogram) bad(sp + ".label_histogram", "is not the sum of the shards' histograms");
    if (s.equal_shards && lo != hi) bad(sp + ".shards", str("equal_shards is set but counts range ", lo, "..", hi));
    if (!s.equal_shards && hi > lo + 1) bad(sp + ".shards", str("counts range ", lo, "..", hi, " (more than one apart)"));
    for (size_t i = 0; i < s.padded.size(); ++i)
      if (s.padded[i].shard < 0 || s.padded[i].shard >= m.num_shards()) bad(str(sp, ".padded[", i, "].shard"), "out of range");
    if (s.ignored.size() > std::min<uint64_t>(s.ignored_files, kMaxIgnoredListed))
      bad(sp + ".ignored", str("names ", s.ignored.size(), " files, more than ignored_files (", s.ignored_files,
                               ") or the ", kMaxIgnoredListed, " listed at most"));
    for (size_t i = 0; i < s.dropped.size(); ++i)
      if (s.dropped[i].label < 0 || s.dropped[i].label >= static_cast<int64_t>(nc)) bad(str(sp, ".dropped[", i, "].label"), "out of range");
  }
}

// Names (paths, class names, reasons quoting them) are bytes: written in core/name_escape.h's form.
std::vector<std::string> escaped(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(escape_name(n));
  return out;
}

json to_json(const Manifest& m) {
  json j;
  j["format"] = m.format;
  j["version"] = m.version;
  j["dataset"] = m.dataset;
  j["created_by"] = m.created_by;
  j["inputs"] = escaped(m.inputs);
  j["num_classes"] = m.num_classes();
  j["classes"] = escaped(m.class_names);
  if (!m.coarse_class_names.empty()) j["coarse_classes"] = escaped(m.coarse_class_names);
  if (!m.class_names_source.empty()) j["class_names_source"] = escape_name(m.class_names_source);
  j["seed"] = m.seed;
  j["num_gpus"] = m.num_gpus;
  j["shards_per_gpu"] = m.shards_per_gpu;
  j["num_shards"] = m.num_shards();
  j["compression"] = m.compression;
  j["remainder"] = m.remainder;
  j["stratified"] = m.stratified;
  j["image"] = {{"format", m.image.format}, {"height", m.image.height}, {"width", m.image.width},
                {"channels", m.image.channels}};
  json splits = json::object();
  for (const SplitInfo& s : m.splits) {
    json js;
    js["num_records"] = s.num_records;
    js["num_source_samples"] = s.num_source_samples;
    js["equal_shards"] = s.equal_shards;
    js["label_histogram"] = s.label_histogram;
    json shards = json::array();
    for (const ShardInfo& sh : s.shards)
      shards.push_back({{"file", sh.file}, {"records", sh.records}, {"bytes", sh.bytes},
                        {"label_histogram", sh.label_histogram}});
    js["shards"] = std::move(shards);
    json dropped = json::array(), padded = json::array(), skipped = json::array();
    for (const auto& d : s.dropped) dropped.push_back({{"source", escape_name(d.source)}, {"label", d.label}});
    for (const auto& p : s.padded)
      padded.push_back({{"source", escape_name(p.source)}, {"label", p.label}, {"shard", p.shard}});
    for (const auto& k : s.skipped)
      skipped.push_back({{"source", escape_name(k.source)}, {"reason", escape_name(k.reason)}});
    js["dropped"] = std::move(dropped);
    js["padded"] = std::move(padded);
    js["skipped"] = std::move(skipped);
    js["ignored_files"] = s.ignored_files;
    json ignored = json::array();
    for (const auto& k : s.ignored)
      ignored.push_back({{"source", escape_name(k.source)}, {"reason", escape_name(k.reason)}});
    js["ignored"] = std::move(ignored);
    splits[s.name] = std::move(js);
  }
  j["splits"] = std::move(splits);
  // Split order is meaningful (train first); JSON objects are not ordered, so it is stated.
  json order = json::array();
  for (const SplitInfo& s : m.splits) order.push_back(s.name);
  j["split_order"] = std::move(order);
  return j;
}

// Typed field access with messages naming the field.
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  const json& field(const json& obj, const char* key, const std::string& path) const {
    if (!obj.is_object()) fail(path, "is not an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(path + "." + key, "is missing");
    return *it;
  }
  std::string string(const json& obj, const char* key, const std::string& path) const {
    const json& v = field(obj, key, path);
    if (!v.is_string()) fail(path + "." + key, "is not a string");
    return v.get<std::string>();
  }
  int64_t integer(const json& obj, const char* key, const std::string& path, int64_t lo, int64_t hi) const {
    return integer_value(field(obj, key, path), path + "." + key, lo, hi);
  }
  int64_t integer_value(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(path, "is not an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(path, "is too large");
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(path, str(x, " is outside ", lo, "..", hi));
    return x;
  }
  bool boolean(const json& obj, const char* key, const std::string& path) const {
    const json& v = field(obj, key, path);
    if (!v.is_boolean()) fail(path + "." + key, "is not true or false");
    return v.get<bool>();
  }
  const json& array(const json& obj, const char* key, const std::string& path, size_t max_size) const {
    const json& v = field(obj, key, path);
    if (!v.is_array()) fail(path + "." + key, "is not an array");
    if (v.size() > max_size) fail(path + "." + key, str("has ", v.size(), " entries, more than ", max_size));
    return v;
  }
  std::vector<std::string> strings(const json& obj, const char* key, const std::string& path, size_t max_size) const {
    std::vector<std::string> out;
    const json& a = array(obj, key, path, max_size);
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) fail(str(path, ".", key, "[", i, "]"), "is not a string");
      out.push_back(unescape_name(a[i].get<std::string>()));
    }
    return out;
  }
  std::vector<uint64_t> counts(const json& obj, const char* key, const std::string& path) const {
    std::vector<uint64_t> out;
    const json& a = array(obj, key, path, kMaxClasses);
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      out.push_back(static_cast<uint64_t>(integer_value(a[i], str(path, ".", key, "[", i, "]"), 0, INT64_MAX)));
    return out;
  }
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw FormatError(str(where_, ": ", path, ": ", msg));
  }

 private:
  std::string where_;
};

// Dropped/padded/skipped lists are bounded by the sample counts; this cap only stops absurd input.
constexpr size_t kMaxListed = size_t{1} << 28;

Manifest from_json(const json& j, const std::string& where) {
  Reader r(where);
  Manifest m;
  const std::string top = "manifest";
  m.format = r.string(j, "format", top);
  if (m.format != kManifestFormat) r.fail("format", str("is \"", m.format, "\", not a fastnn shard manifest"));
  m.version = r.integer(j, "version", top, 1, INT64_MAX);
  if (m.version > kManifestVersion)
    r.fail("version", str(m.version, " was written by a newer fastnn (this one reads version ", kManifestVersion, ")"));
  m.dataset = r.string(j, "dataset", top);
  m.created_by = r.string(j, "created_by", top);
  m.inputs = r.strings(j, "inputs", top, kMaxListed);
  m.class_names = r.strings(j, "classes", top, kMaxClasses);
  int64_t nc = r.integer(j, "num_classes", top, 1, kMaxClasses);
  if (nc != m.num_classes()) r.fail("num_classes", str(nc, " but classes lists ", m.num_classes()));
  if (j.contains("coarse_classes")) m.coarse_class_names = r.strings(j, "coarse_classes", top, kMaxClasses);
  if (j.contains("class_names_source")) m.class_names_source = unescape_name(r.string(j, "class_names_source", top));
  m.seed = static_cast<uint64_t>(0);
  {
    const json& s = r.field(j, "seed", top);
    if (!s.is_number_integer()) r.fail("seed", "is not an integer");
    m.seed = s.is_number_unsigned() ? s.get<uint64_t>() : static_cast<uint64_t>(s.get<int64_t>());
  }
  m.num_gpus = r.integer(j, "num_gpus", top, 1, kMaxShards);
  m.shards_per_gpu = r.integer(j, "shards_per_gpu", top, 1, kMaxShards);
  m.compression = r.string(j, "compression", top);
  m.remainder = r.string(j, "remainder", top);
  m.stratified = r.boolean(j, "stratified", top);
  const json& img = r.field(j, "image", top);
  m.image.format = r.string(img, "format", "image");
  m.image.height = r.integer(img, "height", "image", 0, INT32_MAX);
  m.image.width = r.integer(img, "width", "image", 0, INT32_MAX);
  m.image.channels = r.integer(img, "channels", "image", 0, 4);

  const json& splits = r.field(j, "splits", top);
  if (!splits.is_object()) r.fail("splits", "is not an object");
  std::vector<std::string> order = r.strings(j, "split_order", top, 1024);
  if (order.size() != splits.size()) r.fail("split_order", "does not list every split exactly once");
  for (const std::string& name : order) {
    std::string sp = "splits." + name;
    if (!splits.contains(name)) r.fail("split_order", str("names \"", name, "\", which is not in splits"));
    const json& js = splits.at(name);
    SplitInfo s;
    s.name = name;
    s.num_records = static_cast<uint64_t>(r.integer(js, "num_records", sp, 0, INT64_MAX));
    s.num_source_samples = static_cast<uint64_t>(r.integer(js, "num_source_samples", sp, 0, INT64_MAX));
    s.equal_shards = r.boolean(js, "equal_shards", sp);
    s.label_histogram = r.counts(js, "label_histogram", sp);
    const json& shards = r.array(js, "shards", sp, kMaxShards);
    for (size_t k = 0; k < shards.size(); ++k) {
      std::string f = str(sp, ".shards[", k, "]");
      ShardInfo sh;
      sh.file = r.string(shards[k], "file", f);
      sh.records = static_cast<uint64_t>(r.integer(shards[k], "records", f, 0, INT64_MAX));
      sh.bytes = static_cast<uint64_t>(r.integer(shards[k], "bytes", f, 0, INT64_MAX));
      sh.label_histogram = r.counts(shards[k], "label_histogram", f);
      s.shards.push_back(std::move(sh));
    }
    const json& dropped = r.array(js, "dropped", sp, kMaxListed);
    for (size_t i = 0; i < dropped.size(); ++i) {
      std::string f = str(sp, ".dropped[", i, "]");
      s.dropped.push_back({unescape_name(r.string(dropped[i], "source", f)), r.integer(dropped[i], "label", f, 0, kMaxClasses)});
    }
    const json& padded = r.array(js, "padded", sp, kMaxListed);
    for (size_t i = 0; i < padded.size(); ++i) {
      std::string f = str(sp, ".padded[", i, "]");
      s.padded.push_back({unescape_name(r.string(padded[i], "source", f)), r.integer(padded[i], "label", f, 0, kMaxClasses),
                          r.integer(padded[i], "shard", f, 0, kMaxShards)});
    }
    const json& skipped = r.array(js, "skipped", sp, kMaxListed);
    for (size_t i = 0; i < skipped.size(); ++i) {
      std::string f = str(sp, ".skipped[", i, "]");
      s.skipped.push_back(
          {unescape_name(r.string(skipped[i], "source", f)), unescape_name(r.string(skipped[i], "reason", f))});
    }
    s.ignored_files = static_cast<uint64_t>(r.integer(js, "ignored_files", sp, 0, INT64_MAX));
    if (js.contains("ignored")) {  // absent in manifests written before the paths were listed
      const json& ignored = r.array(js, "ignored", sp, kMaxIgnoredListed);
      for (size_t i = 0; i < ignored.size(); ++i) {
        std::string f = str(sp, ".ignored[", i, "]");
        s.ignored.push_back(
            {unescape_name(r.string(ignored[i], "source", f)), unescape_name(r.string(ignored[i], "reason", f))});
      }
    }
    m.splits.push_back(std::move(s));
  }
  validate(m, where);
  return m;
}

}  // namespace

const SplitInfo* Manifest::find_split(std::string_view name) const {
  for (const SplitInfo& s : splits)
    if (s.name == name) return &s;
  return nullptr;
}

std::string shard_file_name(std::string_view split, int64_t index, int64_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05lld-of-%05lld.tfrecord", static_cast<long long>(index),
                static_cast<long long>(count));
  return std::string(split) + buf;
}

bool is_shard_file_name(std::string_view name) {
  constexpr std::string_view kExt = ".tfrecord";
  if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt || name[0] == '.') return false;
  std::string_view stem = name.substr(0, name.size() - kExt.size());
  // <split>-<digits>-of-<digits>
  size_t of = stem.rfind("-of-");
  if (of == std::string_view::npos) return false;
  std::string_view total = stem.substr(of + 4);
  std::string_view head = stem.substr(0, of);
  size_t dash = head.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return false;
  std::string_view index = head.substr(dash + 1);
  auto digits = [](std::string_view d) {
    if (d.size() < 5) return false;
    for (char c : d)
      if (c < '0' || c > '9') return false;
    return true;
  };
  if (!digits(index) || !digits(total)) return false;
  for (char c : head.substr(0, dash))
    if (!split_char_ok(c)) return false;
  return true;
}

void validate_split_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) ok = ok && split_char_ok(c);
  if (!ok) throw ConfigError(str("split name \"", name, "\" must be 1..64 characters of A-Z a-z 0-9 _ -"));
}

std::string serialize_manifest(const Manifest& m) {
  validate(m, "manifest to write");
  try {
    return to_json(m).dump(2) + "\n";
  } catch (const json::exception& e) {  // a non-name field that is not UTF-8 (names are escaped)
    throw FormatError(str("manifest to write: ", e.what()));
  }
}

Manifest parse_manifest(std::string_view json_text, const std::string& name) {
  json j;
  try {
    j = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    throw FormatError(str(name, ": not valid JSON: ", e.what()));
  }
  if (!j.is_object()) throw FormatError(str(name, ": not a JSON object"));
  return from_json(j, name);
}

Manifest read_manifest(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / kManifestFileName).string();
  return parse_manifest(read_regular_file(file, kMaxManifestBytes), file);
}

std::string format_labels_txt(const std::vector<std::string>& class_names) {
  std::string out;
  for (size_t i = 0; i < class_names.size(); ++i) out += str(i, ":", escape_name(class_names[i]), "\n");
  return out;
}

std::vector<std::string> parse_labels_txt(std::string_view text, const std::string& name) {
  struct Line {
    size_t number;
    std::string_view text;
  };
  std::vector<Line> lines;
  size_t pos = 0, number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(pos, end - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    ++number;
    if (l.find_first_not_of(" \t") != std::string_view::npos) lines.push_back({number, l});
    pos = end + 1;
  }
  if (lines.empty()) throw FormatError(str(name, ": no class names (the file is empty)"));
  if (static_cast<int64_t>(lines.size()) > kMaxClasses) throw FormatError(str(name, ": more than ", kMaxClasses, " classes"));
  auto id_of = [](std::string_view l, int64_t* id) {
    size_t colon = l.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    auto [p, ec] = std::from_chars(l.data(), l.data() + colon, *id);
    return ec == std::errc() && p == l.data() + colon;
  };
  bool all_ids = !lines.empty();
  for (const Line& l : lines) {
    int64_t id;
    all_ids = all_ids && id_of(l.text, &id);
  }
  std::vector<std::string> names;
  if (!all_ids) {
    for (const Line& l : lines) names.push_back(unescape_name(l.text));
    return names;
  }
  names.resize(lines.size());
  std::vector<bool> seen(lines.size(), false);
  for (const Line& l : lines) {
    int64_t id = 0;
    id_of(l.text, &id);
    if (id < 0 || id >= static_cast<int64_t>(lines.size()))
      throw FormatError(str(name, ":", l.number, ": id ", id, " outside 0..", lines.size() - 1));
    if (seen[id]) throw FormatError(str(name, ":", l.number, ": id ", id, " appears twice"));
    seen[id] = true;
    names[id] = unescape_name(l.text.substr(l.text.find(':') + 1));
  }
  return names;
}

}  // namespace fastnn
