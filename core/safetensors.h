// safetensors files (https://github.com/huggingface/safetensors, "Format"):
//
//   8 bytes   N, unsigned little-endian: size of the header
//   N bytes   JSON object, UTF-8: {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//             ..., "__metadata__": {"<key>": "<string>", ...}}   (may end in spaces: padding)
//   rest      the byte buffer; [begin, end) are relative to its start
//
// Tensors are row-major and little-endian; the buffer is covered exactly by the tensors (sorted by
// begin, each starts where the previous ends, the first at 0, the last ends at the end of the file).
//
// Writer: tensors are laid out in the order given, the header is padded with spaces so the buffer
// starts at a multiple of 8 (as the reference implementation does), and the bytes go straight from
// the caller's memory to the file (no staging copy). Names must be unique, non-empty and not
// "__metadata__".
//
// Reader: maps the file read-only (one mmap; the page cache serves a 220 MB checkpoint without a
// second copy) and validates everything before returning: header length bounded by
// SafetensorsLimits::max_header_bytes and by the file, JSON well-formed, one top-level object without
// duplicate keys, every entry exactly {dtype, shape, data_offsets}, dtype known, shape a list of at
// most kMaxRank non-negative integers, offsets ordered, inside the buffer, non-overlapping and covering
// it, element count x dtype size == byte length. Every error is a FormatError naming the file and,
// where there is one, the tensor: "ckpt-10.weights.safetensors: tensor 'fc/weights': shape [10, 5]
// (50 elements of F32, 4 bytes each) does not match data_offsets [0,196] (196 bytes)".
//
// The mapping is read-only and private: if another process truncates the file while it is mapped,
// reads past the new end fault (SIGBUS). Checkpoint files are never modified in place (they are
// replaced by rename), so a SafetensorsFile of a checkpoint is safe.
//
// Threading: a SafetensorsFile is immutable after construction; any number of threads may read it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/named_array.h"

namespace fastnn::checkpoint {

inline constexpr size_t kMaxRank = 16;

struct SafetensorsLimits {
  // The JSON header; real headers are a few hundred bytes per tensor.
  uint64_t max_header_bytes = uint64_t{100} << 20;
};

// The whole file image for `arrays` and `metadata` in memory (tests, small files).
std::string encode_safetensors(std::span<const ArrayView> arrays, const std::map<std::string, std::string>& metadata = {});
// The 8-byte length and padded JSON header that precede the buffer; also checks the arrays.
std::string encode_safetensors_header(std::span<const ArrayView> arrays,
                                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsWriteResult {
  uint64_t size_bytes = 0;
  uint32_t crc32c = 0;  // of the whole file, computed while writing
};
// Creates (truncates) `path` and writes the file; fsyncs it when `fsync` is set. IoError on failure
// (the partial file is left for the caller to remove: writers use a temporary name).
SafetensorsWriteResult write_safetensors(const std::string& path, std::span<const ArrayView> arrays,
                                         const std::map<std::string, std::string>& metadata = {},
                                         bool fsync = true);

class SafetensorsFile {
 public:
  // Maps and validates `path`. IoError if it cannot be opened, FormatError if it is not valid.
  static SafetensorsFile open(const std::string& path, const SafetensorsLimits& limits = {});
  // Validates bytes in memory that the caller keeps alive; `name` is used in errors.
  static SafetensorsFile parse(std::string_view bytes, std::string name, const SafetensorsLimits& limits = {});

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const std::string& name() const { return name_; }
  // Sorted by name (bytewise); views stay valid while this object lives.
  const std::vector<ArrayView>& arrays() const { return arrays_; }
  // nullptr if absent.
  const ArrayView* find(std::string_view name) const;
  // FormatError naming the file if absent.
  const ArrayView& at(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Size of the whole file image.
  uint64_t size_bytes() const { return bytes_.size(); }
  // The whole file image (for checksums).
  std::string_view bytes() const { return bytes_; }

 private:
  SafetensorsFile() = default;
  void validate(const SafetensorsLimits& limits);

  std::string name_;
  std::string_view bytes_;
  void* map_ = nullptr;  // munmap'ed by the destructor when set
  size_t map_size_ = 0;
  std::vector<ArrayView> arrays_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace fastnn::checkpoint
