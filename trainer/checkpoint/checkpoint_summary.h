// What `fastnn inspect <checkpoint>` prints: a loaded checkpoint's step, files (with sizes and
// CRC32C), replicated arrays (name, dtype, shape) and row-partitioned arrays (global shape and the row
// range each shard file holds), as JSON (one object) or as text for people. Reads only the meta and the
// already mapped safetensors headers; shard files are described from the meta (load_checkpoint with
// verification has checked them against it).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/checkpoint_manager.h"

namespace fastnn::checkpoint {

nlohmann::json checkpoint_summary_json(const LoadedCheckpoint& checkpoint);
std::string checkpoint_summary_text(const LoadedCheckpoint& checkpoint);

}  // namespace fastnn::checkpoint
