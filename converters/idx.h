// IDX files (the MNIST format, http://yann.lecun.com/exdb/mnist/): big-endian header
//   00 00 <type> <ndims>, then ndims uint32 sizes, then the items, row-major.
// Only type 0x08 (unsigned byte) is accepted: it is what MNIST, Fashion-MNIST, KMNIST and EMNIST use.
//
// IDX files are small (Fashion-MNIST's largest is 47 MB inflated), so a file is read whole into
// memory; the "never hold the dataset" rule of the converters is about image folders and base64-TSV.
// Files may be gzip-compressed (detected by content, whatever the name); a file of one gzip member is
// inflated whole by libdeflate, anything else streamed through zlib. Memory grows with the bytes
// actually read, never with the sizes a header claims beyond 16 times the file's size. Errors are FormatError naming the file and an
// offset in the uncompressed stream: wrong magic, unsupported type, a dimension count other than
// expected, a size of 0 or over the limits, data shorter or longer than the header declares.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::converters {

struct IdxLimits {
  uint64_t max_items = uint64_t{1} << 31;
  uint64_t max_item_bytes = uint64_t{1} << 24;  // one item (e.g. rows × cols)
  uint64_t max_total_bytes = uint64_t{1} << 34;
};

struct IdxArray {
  std::string name;             // for messages
  std::vector<uint32_t> dims;   // dims[0] = item count
  std::string data;             // the items, header stripped
  uint32_t header_bytes = 0;    // 4 + 4 × ndims: offset of data in the file
  uint64_t count() const { return dims.empty() ? 0 : dims[0]; }
  uint64_t item_bytes() const;
  const uint8_t* item(uint64_t i) const {
    return reinterpret_cast<const uint8_t*>(data.data()) + i * item_bytes();
  }
};

// The header alone (dims, header_bytes; data empty), validated as above but without reading the items.
IdxArray read_idx_header(const std::string& path, int expected_dims, const IdxLimits& limits = {});

// From memory (tests, fuzzing): `bytes` is the uncompressed file.
IdxArray parse_idx(std::string_view bytes, const std::string& name, int expected_dims, const IdxLimits& limits = {});
// From a file, plain or gzip.
IdxArray read_idx(const std::string& path, int expected_dims, const IdxLimits& limits = {});

// read_idx's fast path: fills `header->data` (header from read_idx_header) from a gzip file of exactly
// one member holding the header's bytes, in a file at least 1/16 the size of what the header claims.
// Returns false, having changed nothing, for anything else (several members, trailing bytes, damage,
// a short stream, a file changed since its header was read); read_idx then streams the file through
// zlib, which says what is wrong, with its offset.
bool inflate_one_gzip_member(const std::string& path, IdxArray* header);

}  // namespace fastnn::converters
