// Shared by checkpoint_files.cpp (read side) and checkpoint_manager.cpp (write side); not public API.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainer/checkpoint/checkpoint_manager.h"

namespace fastnn::checkpoint::internal {

inline constexpr const char* kIndexName = "checkpoint";

// The whole file; FormatError if larger than max_bytes, IoError if unreadable.
std::string read_small_file(const std::string& path, size_t max_bytes);
// The meta of `prefix` parses and both data files exist with the sizes it records.
bool is_complete(const std::string& prefix);
// Complete checkpoints in `dir`, ascending step; empty if `dir` does not exist.
std::vector<CheckpointInfo> list_complete(const std::string& dir);
// The index's checkpoint if it is complete, else the highest complete step, else nullopt.
std::optional<CheckpointInfo> latest_complete(const std::string& dir);

// Names (in `dir`) of the shard files of checkpoint `step` that exist, whatever world size wrote them.
std::vector<std::string> shard_names_of_step(const std::string& dir, int64_t step);

}  // namespace fastnn::checkpoint::internal
