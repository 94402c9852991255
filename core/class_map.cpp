#include "core/class_map.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "core/check.h"
#include "core/dataset_files.h"
#include "core/manifest.h"
#include "core/name_escape.h"

namespace fastnn {
namespace {

// A name as messages show it: escaped (a newline or a lookalike byte stays visible), cut when huge.
std::string quoted(const std::string& name) {
  std::string e = escape_name(name);
  if (e.size() > 120) e = e.substr(0, 117) + "...";
  return "\"" + e + "\"";
}

// Whether `path` exists; any stat failure but "no such file" (a permission, say) is an IoError.
bool exists_or_throw(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno != ENOENT) throw_io_error(path, "stat");
  return false;
}

}  // namespace

std::string class_map_difference(const ClassMap& a, const ClassMap& b) {
  const size_t common = std::min(a.names.size(), b.names.size());
  for (size_t i = 0; i < common; ++i)
    if (a.names[i] != b.names[i])
      return str("class ", i, " is ", quoted(a.names[i]), " in ", a.origin, " but ", quoted(b.names[i]), " in ", b.origin,
                 a.names.size() != b.names.size()
                     ? str(" (and ", a.origin, " has ", a.names.size(), " classes, ", b.origin, " ", b.names.size(), ")")
                     : std::string());
  if (a.names.size() == b.names.size()) return "";
  const ClassMap& longer = a.names.size() > b.names.size() ? a : b;
  return str(a.origin, " has ", a.names.size(), " classes, ", b.origin, " has ", b.names.size(), ": class ", common, " (",
             quoted(longer.names[common]), ") is only in ", longer.origin);
}

void require_same_classes(const ClassMap& expected, const ClassMap& actual, std::string_view what,
                          std::string_view advice) {
  const std::string d = class_map_difference(expected, actual);
  if (!d.empty()) throw ConfigError(str(what, ": the class maps differ: ", d, advice.empty() ? "" : "; ", advice));
}

std::optional<ClassMap> read_folder_class_map(const std::string& dir) {
  const std::string base = dir.empty() ? "." : dir;
  const std::string manifest = base + "/" + kManifestFileName;
  std::optional<std::vector<std::string>> labels = read_labels_in(base);
  const ClassMap from_labels = labels ? ClassMap{*labels, base + "/" + kLabelsFileName} : ClassMap{};
  if (!exists_or_throw(manifest)) {
    if (!labels) return std::nullopt;
    return from_labels;
  }
  ClassMap map{read_manifest(manifest).class_names, manifest};
  if (labels) {
    const std::string d = class_map_difference(map, from_labels);
    if (!d.empty())
      throw FormatError(str(base, ": manifest.json and labels.txt disagree (", d,
                            "); they are written together, so one was changed since: convert again"));
  }
  return map;
}

std::optional<ClassMap> without_first_classes(const ClassMap& map, int64_t offset) {
  if (offset <= 0) return map;
  if (static_cast<uint64_t>(offset) >= map.names.size()) return std::nullopt;
  return ClassMap{std::vector<std::string>(map.names.begin() + offset, map.names.end()),
                  str(map.origin, " less its first ", offset, " class", offset > 1 ? "es" : "", " (labels_offset)")};
}

}  // namespace fastnn
