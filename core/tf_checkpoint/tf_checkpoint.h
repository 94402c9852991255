// A TensorFlow checkpoint named the ways TF-slim's and TensorFlow's tools name one, told apart by
// content, and opened as one TfTensorSource whatever its format.
//
// find_tf_checkpoint(path) recognises:
//   - a V2 prefix P (P.index exists and is a table), or P.index / P.data-NNNNN-of-NNNNN / P.meta itself;
//   - a V1 file (a table whose last 8 bytes are the magic and which is no V2 index: TF-slim's published
//     `inception_v3.ckpt`), and a V1 checkpoint split into P-NNNNN-of-NNNNN files (named by P, by one
//     of them, or by TensorFlow's pattern P-?????-of-NNNNN);
//   - a folder holding TensorFlow's `checkpoint` file (CheckpointState text: model_checkpoint_path,
//     relative to the folder or absolute) that names one of the above.
// Anything else (fastnn's own checkpoints, whose meta file is protobuf text, and paths that do not
// exist) gives nullopt, so callers fall back to fastnn's checkpoint loader. A path that is
// recognised but unreadable is an error there, not a fallback.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tf_checkpoint/table.h"
#include "core/tf_checkpoint/tf_tensor.h"

namespace fastnn::tf_checkpoint {

enum class TfFormat { kV1, kV2 };

struct TfCheckpointPath {
  TfFormat format = TfFormat::kV2;
  std::string prefix;               // V2: the prefix; V1: the file, or the shards' prefix
  std::vector<std::string> files;   // every file: V2 index then data files (after open), V1 the tables
};

std::optional<TfCheckpointPath> find_tf_checkpoint(const std::string& path);

struct TfCheckpoint {
  TfCheckpointPath path;
  std::unique_ptr<TfTensorSource> tensors;
  std::string describe() const;  // "TensorFlow V2 checkpoint m.ckpt (index + 2 data files)"
};

// Opens what find_tf_checkpoint found (every file checked as its reader's header says).
TfCheckpoint open_tf_checkpoint(const TfCheckpointPath& path, const TableLimits& limits = {});

}  // namespace fastnn::tf_checkpoint
