// What the top folders of an image-folder input mean: class folders (TF-slim's flowers layout), or
// split folders that each hold class folders (torchvision's ImageFolder trees, `root/{train,val}/<class>`).
//
// A folder named train, val, validation or test (any case) is a split folder; val and validation
// are both the split "validation". With FolderLayout::kAuto a root whose non-hidden sub-folders are
// all split folders is a split tree, and one with none is a class tree; a root holding both kinds is
// refused (ConfigError naming both groups), because reading it either way would make classes of
// splits or drop a class: the user says which with --layout. Every root of one conversion must have
// the same layout, and a split tree's splits come out in the order train, validation, test.
// A class tree's one split is `split` ("" = "train"); giving a split for a split tree is refused.
// Entries at the top that are not folders, and hidden ones, are passed over and named in `ignored`
// (with the reason), never dropped in silence.
// Errors: ConfigError (the layouts above, two folders for one split in a root), IoError / FormatError
// for a root that is missing, not a folder, or unreadable. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/manifest.h"

namespace fastnn::converters {

enum class FolderLayout { kAuto, kClasses, kSplits };

// "auto", "classes", "splits" (the --layout values); ConfigError for anything else.
FolderLayout parse_folder_layout(std::string_view name);

// The split a folder name stands for: "train", "validation" (val, validation), "test"; "" for others.
std::string split_of_folder(std::string_view name);

struct SplitFolders {
  std::string split;                 // the output split's name
  std::vector<std::string> folders;  // the folders (one per root at most) that hold its class folders
};

struct FolderTree {
  bool split_tree = false;
  std::vector<SplitFolders> splits;
  std::vector<SkippedSample> ignored;  // top-level entries passed over: path, why
};

FolderTree read_folder_tree(const std::vector<std::string>& roots, FolderLayout layout, const std::string& split);

}  // namespace fastnn::converters
