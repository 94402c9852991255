// What `fastnn inspect <TensorFlow checkpoint>` prints: the format and files, then every tensor (name,
// TensorFlow dtype, shape, bytes, the slices of a partitioned one), as JSON (one object) or as text for
// people. Every numeric tensor is read, so its checksums are verified (a damaged file is an error naming
// it, the tensor and the byte offset, as when training reads it); string tensors are listed unread. The
// JSON gives each numeric tensor's `crc32c`: of its values' bytes as read (slices joined), so the same
// values give the same number in any file, V1 or V2 (what a test of frozen weights compares).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/tf_checkpoint/tf_checkpoint.h"

namespace fastnn::checkpoint {

nlohmann::json tf_checkpoint_summary_json(const tf_checkpoint::TfCheckpoint& checkpoint);
std::string tf_checkpoint_summary_text(const tf_checkpoint::TfCheckpoint& checkpoint);

}  // namespace fastnn::checkpoint
