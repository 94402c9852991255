// TensorFlow's V1 checkpoints (SavedTensorSlices: tensorflow/core/util/tensor_slice_{reader,writer}.cc),
// the format of TF-slim's published 2016-2018 `.ckpt` files (inception_v3_2016_08_28,
// resnet_v1_50_2016_08_28, ...): one table (table.h) per file, holding
//   under the empty key   a SavedTensorSlices whose `meta` lists every tensor (name, shape, dtype) and
//                         the slices of it this file holds (one whole-tensor slice when unpartitioned)
//   under a slice's key   (tensor_slices.h) a SavedTensorSlices whose `data` is that slice: its name,
//                         extents and a TensorProto of its values, row-major: float_val (float),
//                         double_val, int_val (int32, uint8, int16, int8), int64_val, half_val (half,
//                         16 bits in each int32), bool_val, or tensor_content (raw bytes)
// A checkpoint saved with Saver(sharded=True) in V1 is several such files ("model.ckpt-?????-of-00004");
// a tensor's slices may then lie in different files.
//
// open() parses every file's table (every block's CRC-32C checked) and meta, and checks that each listed
// slice has its entry and that each tensor's slices (over all files) tile it; a tensor listed by two
// files must have the same shape and dtype in both. read() parses the slices' entries and checks that
// each holds that slice of that tensor with exactly its number of values. Errors are FormatError naming
// the file, the tensor and the byte offset of the entry.
// Threading: immutable after open(); any number of threads may read.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mapped_file.h"
#include "core/tf_checkpoint/table.h"
#include "core/tf_checkpoint/tf_tensor.h"

namespace fastnn::tf_checkpoint {

class SlicesReader final : public TfTensorSource {
 public:
  // Maps and checks `files` (one file, or every file of a sharded V1 checkpoint).
  static std::unique_ptr<SlicesReader> open(const std::vector<std::string>& files, const TableLimits& limits = {});
  // The same from (name, bytes) pairs the caller keeps alive (tests, fuzzing).
  static std::unique_ptr<SlicesReader> parse(const std::vector<std::pair<std::string, std::string_view>>& files,
                                             const TableLimits& limits = {});

  const std::vector<TfTensorInfo>& tensors() const override { return tensors_; }
  checkpoint::Array read(const std::string& name) const override;

 private:
  struct SliceEntry {
    size_t table = 0;
    const TableEntry* entry = nullptr;
    Slice slice;
  };
  SlicesReader() = default;
  void add_file(std::string_view bytes, const std::string& name, const TableLimits& limits);
  void finish();

  std::vector<MappedFile> files_;
  std::vector<Table> tables_;
  std::vector<TfTensorInfo> tensors_;            // sorted by name
  std::vector<std::vector<SliceEntry>> where_;   // per tensor, its slices (one whole one when unpartitioned)
};

}  // namespace fastnn::tf_checkpoint
