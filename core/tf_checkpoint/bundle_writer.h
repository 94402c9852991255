// Writes a TensorFlow V2 checkpoint (bundle_reader.h has the format) as TensorFlow's BundleWriter does:
// P.data-00000-of-00001 with the tensors' bytes in name order, and P.index, a table (table.h) holding a
// BundleHeaderProto (one data file, little-endian, format version 1) under the empty key and one
// BundleEntryProto per tensor (dtype, shape, shard 0, offset, size, masked CRC-32C of the bytes).
// tf.compat.v1.train.Saver.restore, tf.train.load_checkpoint and fastnn's reader read it.
//
// Arrays are named arrays (core/named_array.h) under their TensorFlow names: unique, non-empty, not
// starting with a zero byte (the keys of slices); dtypes map as tf_dtype.h says. Both files are written
// under temporary names beside the prefix and renamed into place, the index last, so a reader never
// sees an index whose data file is incomplete. IoError naming the path on a failed write.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "core/named_array.h"

namespace fastnn::tf_checkpoint {

// The index file's and the data file's bytes.
std::pair<std::string, std::string> encode_bundle(std::span<const checkpoint::ArrayView> arrays);
// Writes P.data-00000-of-00001 and P.index; returns the total bytes written.
uint64_t write_bundle(const std::string& prefix, std::span<const checkpoint::ArrayView> arrays);

}  // namespace fastnn::tf_checkpoint
