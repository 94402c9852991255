// Finding the files of a shard set that has no manifest.json (TF-slim's and FastNN's own shards):
// glob patterns, FastNN's `%s` file_pattern, split names read from file names, and labels.txt.
//
// Patterns: a wildcard (* ? [..], fnmatch(3) with FNM_PERIOD) may appear in the last path component
// only; a relative pattern is resolved against base_dir. Matches are sorted by name (byte order), as
// FastNN sorts its glob; folders, hidden names (unless the pattern itself starts with '.'), and
// manifest.json / labels.txt never match a wildcard. A pattern without wildcards names one file,
// which must exist. Nothing here opens a matched file: readers do, through core/input_file.h.
//
// Errors: ConfigError naming the pattern and the folder searched (a pattern that matches nothing, a
// wildcard in a folder part, a file_pattern without exactly one %s); IoError for an unreadable folder.
// Thread-safe (no shared state).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn {

// True when `s` holds a glob wildcard (*, ?, [).
bool has_wildcard(std::string_view s);

// FastNN's file_pattern ("flowers_%s_*.tfrecord", "cifar10_%s.tfrecord"): the one "%s" replaced by
// `split`, "%%" by "%". Any other '%' use, or not exactly one %s, is a ConfigError naming `what`.
std::string substitute_split(std::string_view pattern, std::string_view split, std::string_view what = "file_pattern");

// The files one pattern matches, sorted (an empty vector when a wildcard pattern matches nothing;
// a plain path that does not exist gives an empty vector too).
std::vector<std::string> match_files(std::string_view pattern, const std::string& base_dir = "");

// Every pattern in order, each one's matches sorted, duplicates dropped (the first kept). A pattern
// that matches nothing is a ConfigError: "<what>: <pattern> matches no file in <folder>".
std::vector<std::string> expand_patterns(const std::vector<std::string>& patterns, const std::string& base_dir,
                                         std::string_view what);

// The split a TF-slim / FastNN shard name carries: the first token (names split at '_', '-', '.')
// that is "train", "validation", "test" (or "val", read as "validation"), case-insensitive.
// "flowers_train_00000-of-00005.tfrecord" → "train", "validation-00003-of-00128" → "validation",
// "cifar10_test.tfrecord" → "test"; "" when there is none.
std::string split_of_file_name(std::string_view file_name);

// labels.txt in `dir` (core/manifest.h's parse_labels_txt: TF-slim's "id:name" lines, ids 0..n-1 each
// once, or plain names): nullopt when the folder has no labels.txt; FormatError naming the file and
// line for a bad one; IoError when it cannot be read; more than kMaxLabelsBytes is a FormatError.
std::optional<std::vector<std::string>> read_labels_in(const std::string& dir);

}  // namespace fastnn
