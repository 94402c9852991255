#include "converters/folder_layout.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>

#include "core/ascii.h"
#include "core/check.h"
#include "core/folder_walk.h"

namespace fastnn::converters {
namespace {

constexpr const char* kSplitOrder[] = {"train", "validation", "test"};

// "a, b, c" of at most five names, then how many more.
std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += str(" and ", names.size() - 5, " more");
  return out;
}

struct Root {
  std::string path;
  std::vector<std::string> split_dirs, other_dirs;
};

}  // namespace

FolderLayout parse_folder_layout(std::string_view name) {
  if (name == "auto") return FolderLayout::kAuto;
  if (name == "classes") return FolderLayout::kClasses;
  if (name == "splits") return FolderLayout::kSplits;
  throw ConfigError(str("--layout must be auto, classes or splits, not \"", name, "\""));
}

std::string split_of_folder(std::string_view name) {
  const std::string l = ascii_lower(name);
  if (l == "train") return "train";
  if (l == "val" || l == "validation") return "validation";
  if (l == "test") return "test";
  return "";
}

FolderTree read_folder_tree(const std::vector<std::string>& roots, FolderLayout layout, const std::string& split) {
  if (roots.empty()) throw ConfigError("image-folder needs at least one --input folder");
  FolderTree tree;
  std::vector<Root> listed_roots;
  for (std::string root : roots) {
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    struct stat st;
    if (::stat(root.c_str(), &st) != 0) throw_io_error(root, "open input folder");
    if (!S_ISDIR(st.st_mode)) throw ConfigError(str(root, ": an image-folder input must be a folder of class folders"));
    Root r{root, {}, {}};
    for (const FolderEntry& e : list_folder(root)) {
      const std::string path = root + "/" + e.name;
      if (e.name[0] == '.') tree.ignored.push_back({path, "hidden"});
      else if (!e.is_dir) tree.ignored.push_back({path, e.problem.empty() ? "not a folder (the input's top level holds folders)" : e.problem});
      else (split_of_folder(e.name).empty() ? r.other_dirs : r.split_dirs).push_back(e.name);
    }
    listed_roots.push_back(std::move(r));
  }

  // Decide each root's layout, then require one for all.
  std::vector<bool> is_split_tree;
  for (const Root& r : listed_roots) {
    if (layout == FolderLayout::kClasses) {
      is_split_tree.push_back(false);
      continue;
    }
    if (!r.split_dirs.empty() && !r.other_dirs.empty())
      throw ConfigError(str(r.path, ": holds split folders (", listed(r.split_dirs), ") and other folders (",
                            listed(r.other_dirs), ") side by side; ",
                            layout == FolderLayout::kSplits
                                ? "with --layout splits every folder there must be train, val, validation or test"
                                : "move the class folders into the split folders, or pass --layout classes if the "
                                  "split-named folders are classes"));
    if (layout == FolderLayout::kSplits && r.split_dirs.empty())
      throw ConfigError(str(r.path, ": --layout splits, but it holds no train, val, validation or test folder"));
    is_split_tree.push_back(!r.split_dirs.empty());
  }
  for (size_t i = 1; i < listed_roots.size(); ++i)
    if (is_split_tree[i] != is_split_tree[0])
      throw ConfigError(str(listed_roots[0].path, " holds ", is_split_tree[0] ? "split" : "class", " folders but ",
                            listed_roots[i].path, " holds ", is_split_tree[i] ? "split" : "class",
                            " folders; convert them separately (--labels-from keeps one class map)"));
  tree.split_tree = !listed_roots.empty() && is_split_tree[0];

  if (!tree.split_tree) {
    SplitFolders s{split.empty() ? "train" : split, {}};
    for (const Root& r : listed_roots) s.folders.push_back(r.path);
    tree.splits.push_back(std::move(s));
    return tree;
  }
  if (!split.empty())
    throw ConfigError(str("--split ", split, " names the split of a class-folder tree, but ", listed_roots[0].path,
                          " holds split folders (", listed(listed_roots[0].split_dirs),
                          "), which name the splits themselves"));
  for (const char* name : kSplitOrder) {
    SplitFolders s{name, {}};
    for (const Root& r : listed_roots) {
      std::vector<std::string> mine;
      for (const std::string& d : r.split_dirs)
        if (split_of_folder(d) == name) mine.push_back(d);
      if (mine.size() > 1)
        throw ConfigError(str(r.path, ": ", listed(mine), " are both the split \"", name, "\"; keep one of them"));
      if (!mine.empty()) s.folders.push_back(r.path + "/" + mine[0]);
    }
    if (!s.folders.empty()) tree.splits.push_back(std::move(s));
  }
  return tree;
}

}  // namespace fastnn::converters
