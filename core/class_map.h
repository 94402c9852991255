// One class map per dataset (../shared/DESIGN.md "Class maps"): the names of classes 0..n-1, carried
// from conversion (manifest.json, labels.txt) to checkpoint to prediction. Two maps that are to label
// the same records must be equal name for name; anything else is refused, naming the first place they
// differ, because a label that means another class trains and evaluates without any error (a
// validation set numbered on its own gives top-1 0.0000 and no warning).
//
// A ClassMap says where it came from (`origin`: "data/fm/manifest.json", "runs/x/ckpt-200.meta.pbtxt"),
// so a refusal can name both sides. Reading a folder's map: its manifest.json's `classes`, checked
// against a labels.txt beside it (the two are written together; a labels.txt edited or replaced since
// is a FormatError naming the first difference), else labels.txt alone (TF-slim's shards), else none.
// Errors: FormatError / IoError from reading, ConfigError from require_same_classes. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn {

struct ClassMap {
  std::vector<std::string> names;  // index = label
  std::string origin;              // where the names were read, for messages
};

// The first difference of two maps as a sentence naming both origins ("class 2 is \"roses\" in A but
// \"tulips\" in B", "A has 3 classes, B has 2: class 2 (\"tulips\") is only in A"); "" when equal.
// Names are quoted in core/name_escape.h's escaped form, so a control byte cannot hide a difference.
std::string class_map_difference(const ClassMap& a, const ClassMap& b);

// ConfigError "<what>: the class maps differ: <difference>[; <advice>]" unless the maps are equal.
void require_same_classes(const ClassMap& expected, const ClassMap& actual, std::string_view what,
                          std::string_view advice = {});

// The class map a dataset folder carries (rules above); nullopt when it has neither file.
std::optional<ClassMap> read_folder_class_map(const std::string& dir);

// The first `offset` classes dropped (a job's labels_offset: TF-slim's background class), keeping the
// origin with the offset said; nullopt when nothing is left.
std::optional<ClassMap> without_first_classes(const ClassMap& map, int64_t offset);

}  // namespace fastnn
