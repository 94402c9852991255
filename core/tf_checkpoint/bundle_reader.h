// TensorFlow's V2 checkpoints ("tensor bundles", tensorflow/core/util/tensor_bundle/): a prefix P with
//   P.index                         a table (table.h): under the empty key a BundleHeaderProto
//                                   (num_shards, endianness, version), under each tensor's name a
//                                   BundleEntryProto (dtype, shape, shard_id, offset, size, masked
//                                   CRC-32C of the bytes; or, for a partitioned tensor, its slices,
//                                   each with its own entry under the slice's key, tensor_slices.h)
//   P.data-00000-of-0000N ...       the tensors' bytes, row-major, in the header's byte order
//
// open() checks the whole index before returning: the header (num_shards in [1, 100000], little-endian,
// a format version this reader knows), every entry (a known shape of rank <= 16, a size equal to the
// elements times the dtype's size for fixed-size types, a shard that exists, bytes inside that data
// file), every partitioned tensor's slices (present, of the tensor's dtype and of the slice's shape,
// tiling the tensor). The bytes are checked against their CRC-32C when read. Strings and other
// variable-size dtypes are listed but not read. Errors are FormatError naming the file, the tensor and
// the byte offset: "m.ckpt.data-00000-of-00001: tensor 'conv1/weights' at byte 4096 (3456 bytes):
// CRC-32C 0x1c2b... does not match the stored 0x9a0f...".
//
// The data files are mapped (mapped_file.h), not read: a 500 MB VGG checkpoint costs no copy until a
// tensor is read. Threading: immutable after open(); any number of threads may read.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/tf_checkpoint/table.h"
#include "core/tf_checkpoint/tf_tensor.h"

namespace fastnn::tf_checkpoint {

// "P.index", "P.data-00001-of-00004" (TensorFlow's naming.cc).
std::string bundle_index_path(const std::string& prefix);
std::string bundle_data_path(const std::string& prefix, int shard, int num_shards);

class BundleReader final : public TfTensorSource {
 public:
  // Maps P.index and every data file the header names; IoError when one is missing.
  static std::unique_ptr<BundleReader> open(const std::string& prefix, const TableLimits& limits = {});
  // The same from bytes the caller keeps alive (tests, fuzzing): the index, then the data files in shard
  // order (their count must be the header's num_shards).
  static std::unique_ptr<BundleReader> parse(std::string_view index, const std::vector<std::string_view>& data,
                                             const std::string& prefix, const TableLimits& limits = {});

  const std::vector<TfTensorInfo>& tensors() const override { return tensors_; }
  checkpoint::Array read(const std::string& name) const override;
  int num_shards() const { return num_shards_; }

 private:
  struct Location {
    int shard = 0;
    uint64_t offset = 0, size = 0;
    uint32_t crc = 0;  // unmasked
  };
  BundleReader() = default;
  void load(std::string_view index, const TableLimits& limits);
  std::string_view bytes_at(const TfTensorInfo& t, const Location& at) const;

  std::string prefix_;
  bool verify_checksums_ = true;
  int num_shards_ = 0;
  std::vector<MappedFile> files_;               // open(): the data files
  std::vector<std::string_view> data_;          // each data file's bytes
  std::vector<TfTensorInfo> tensors_;           // sorted by name
  std::vector<std::vector<Location>> where_;    // per tensor: its bytes, or each slice's (info order)
};

}  // namespace fastnn::tf_checkpoint
