// TensorFlow's immutable string table (tensorflow/core/lib/io/table*.{h,cc}; LevelDB's table format,
// doc/table_format.md there): what a V2 checkpoint's `.index` and a whole V1 checkpoint file are.
//
//   [data block]... [metaindex block] [index block] [footer, 48 bytes]
//   footer      metaindex handle, index handle (a handle: varint64 offset, varint64 size), zero padding
//               to 40 bytes, then the magic 0xdb4775248b80fb57 as two little-endian fixed32 (low first)
//   block       entries {varint32 shared, varint32 unshared, varint32 value length, the key's last
//               `unshared` bytes (its first `shared` are the previous key's), the value}, then the
//               restart offsets (fixed32 each) and their count (fixed32); an entry at a restart offset
//               shares nothing
//   on disk     every block is followed by a type byte (0 raw, 1 Snappy) and the masked CRC-32C of the
//               stored block bytes and that type byte
//   index       one entry per data block: key >= the block's last key, value the block's handle
//
// TensorFlow writes both checkpoint formats uncompressed (tensor_bundle.cc, tensor_slice_writer.cc), and
// reads Snappy blocks (TensorFlow 1.1 could write them): both are read here, Snappy through Debian's
// libsnappy.
//
// Reading is eager and strict: the footer, the index and every data block are parsed and checked
// (handles inside the file and before the footer, trailer CRC, type byte, restart array, entry lengths
// inside the block, keys strictly increasing over the whole table, each index key at least its block's
// last key). Every length is bounded before it is used; an uncompressed length is bounded by what
// Snappy can expand the block to (22x) and by TableLimits before anything is allocated. Errors are
// FormatError "NAME: <what> at byte OFFSET".
// The table keeps views into `bytes` (raw blocks), which the caller keeps alive, and owns the
// decompressed Snappy blocks. Threading: immutable after parse(); any number of threads may read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::tf_checkpoint {

inline constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
inline constexpr size_t kTableFooterBytes = 48;

struct TableLimits {
  // Decompressed bytes of one Snappy block (a raw block is bounded by the file).
  uint64_t max_uncompressed_block_bytes = uint64_t{1} << 31;
  // Entries of the whole table (an index has one per tensor; a V1 file one per tensor slice).
  uint64_t max_entries = uint64_t{1} << 24;
  // Off only for fuzzing: blocks and tensors whose CRC-32C does not match are parsed anyway, so that the
  // fuzzer reaches the structure behind the checksums (every other check stays).
  bool verify_checksums = true;
};

struct TableEntry {
  std::string key;
  std::string_view value;
  // Where the value lies, for messages: its byte offset in the file for raw blocks; for a Snappy block,
  // the block's offset (the value is inside the decompressed block).
  uint64_t offset = 0;
};

class Table {
 public:
  // Parses and checks the whole table in `bytes` (a file's image); `name` (the file) prefixes errors.
  static Table parse(std::string_view bytes, std::string name, const TableLimits& limits = {});
  // Whether `bytes` ends in the table magic: a cheap test of what a file is, before parse().
  static bool has_magic(std::string_view bytes);

  Table(Table&&) noexcept = default;
  Table& operator=(Table&&) noexcept = default;

  const std::string& name() const { return name_; }
  // Sorted by key (bytewise), keys unique.
  const std::vector<TableEntry>& entries() const { return entries_; }
  // nullptr when absent.
  const TableEntry* find(std::string_view key) const;

 private:
  Table() = default;
  void read_block(std::string_view bytes, uint64_t offset, uint64_t size, const TableLimits& limits,
                  std::vector<TableEntry>* out);

  std::string name_;
  std::vector<TableEntry> entries_;
  std::vector<std::unique_ptr<char[]>> decompressed_;  // the Snappy blocks' bytes, which values view
};

// What TensorFlow's TableBuilder writes, for fastnn's own V2 index: `entries` (sorted, unique keys) as
// raw blocks of about `block_bytes` with a restart every 16 keys, an empty metaindex, the index (a
// restart at every key) and the footer.
std::string encode_table(const std::vector<std::pair<std::string, std::string>>& entries, size_t block_bytes = 262144);

}  // namespace fastnn::tf_checkpoint
