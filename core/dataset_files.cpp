#include "core/dataset_files.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <set>

#include "core/ascii.h"
#include "core/check.h"
#include "core/input_file.h"
#include "core/manifest.h"

namespace fastnn {
namespace {

bool is_absolute(std::string_view p) { return !p.empty() && p.front() == '/'; }

std::string join(const std::string& dir, std::string_view name) {
  if (dir.empty() || is_absolute(name)) return std::string(name);
  return dir.back() == '/' ? str(dir, name) : str(dir, "/", name);
}

}  // namespace

bool has_wildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::string substitute_split(std::string_view pattern, std::string_view split, std::string_view what) {
  std::string out;
  int found = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (next == 's') {
      out += split;
      ++found;
    } else if (next == '%') {
      out += '%';
    } else {
      throw ConfigError(str(what, " \"", pattern, "\": '%' must be followed by s (the split name) or % (a literal %)"));
    }
    ++i;
  }
  if (found != 1)
    throw ConfigError(str(what, " \"", pattern, "\" must hold exactly one %s, where the split name goes (",
                          "e.g. flowers_%s_*.tfrecord), not ", found));
  return out;
}

std::vector<std::string> match_files(std::string_view pattern, const std::string& base_dir) {
  const std::string full = join(base_dir, pattern);
  const size_t slash = full.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : full.substr(0, slash));
  const std::string leaf = slash == std::string::npos ? full : full.substr(slash + 1);
  if (has_wildcard(std::string_view(full).substr(0, slash == std::string::npos ? 0 : slash)))
    throw ConfigError(str(full, ": wildcards are allowed in the file name only, not in its folders"));
  if (leaf.empty()) throw ConfigError(str(full, ": names a folder, not files"));
  if (!has_wildcard(leaf)) {
    struct stat st;
    if (::stat(full.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return {};
    return {full};
  }
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw_io_error(dir, "list folder");
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == ".." || n == kManifestFileName || n == kLabelsFileName) continue;
    if (::fnmatch(leaf.c_str(), n.c_str(), FNM_PERIOD) != 0) continue;
    names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<std::string> out;
  for (const std::string& n : names) {
    const std::string p = slash == std::string::npos ? n : str(dir == "/" ? "" : dir, "/", n);
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> expand_patterns(const std::vector<std::string>& patterns, const std::string& base_dir,
                                         std::string_view what) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& p : patterns) {
    std::vector<std::string> m = match_files(p, base_dir);
    if (m.empty()) {
      const std::string full = join(base_dir, p);
      const size_t slash = full.rfind('/');
      throw ConfigError(str(what, ": ", p, " matches no file", has_wildcard(p) ? "" : " (it does not exist)", " in ",
                            slash == std::string::npos ? std::string(".") : full.substr(0, std::max<size_t>(slash, 1))));
    }
    for (std::string& f : m)
      if (seen.insert(f).second) out.push_back(std::move(f));
  }
  return out;
}

std::string split_of_file_name(std::string_view name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find_first_of("_-.", start);
    if (end == std::string_view::npos) end = name.size();
    const std::string t = ascii_lower(name.substr(start, end - start));
    if (t == "train" || t == "validation" || t == "test") return t;
    if (t == "val") return "validation";
    start = end + 1;
  }
  return "";
}

std::optional<std::vector<std::string>> read_labels_in(const std::string& dir) {
  const std::string path = join(dir.empty() ? "." : dir, kLabelsFileName);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_io_error(path, "stat");
  }
  return parse_labels_txt(read_regular_file(path, kMaxLabelsBytes), path);
}

}  // namespace fastnn
