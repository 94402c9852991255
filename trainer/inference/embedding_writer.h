// A float32 2-D array written row by row, for `fastnn predict --embeddings`, in one of two formats
// chosen by the file's extension:
//   .npy          NumPy format 1.0 (numpy.load reads it);
//   .safetensors  one tensor named "embeddings", dtype F32, shape [rows, columns], with
//                 __metadata__ {"format": "fastnn-embeddings"} (safetensors.numpy.load_file reads it).
// The row count is only known at the end, so the header is written with room for any count (padded
// with spaces, which both formats allow) and rewritten in place by commit(); the data starts at byte
// kEmbeddingHeaderBytes in both. The file appears complete or not at all, and never over a FIFO, a
// device or one of the command's `inputs` (core/output_file.h: written beside it, renamed by commit();
// the destructor removes an uncommitted one).
// Threading: one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "core/output_file.h"

namespace fastnn::inference {

enum class EmbeddingFormat { kNpy, kSafetensors };
// From the path's extension; ConfigError naming the path for any other.
EmbeddingFormat embedding_format(const std::string& path);

class EmbeddingWriter {
 public:
  EmbeddingWriter(std::string path, int64_t columns, std::vector<std::string> inputs = {});
  ~EmbeddingWriter();
  EmbeddingWriter(const EmbeddingWriter&) = delete;
  EmbeddingWriter& operator=(const EmbeddingWriter&) = delete;

  void add_row(std::span<const float> row);  // Error unless row.size() == columns
  void commit();
  int64_t rows() const { return rows_; }

 private:
  void write_header();
  EmbeddingFormat format_;
  int64_t columns_, rows_ = 0;
  std::unique_ptr<OutputFile> file_;
};

// The header bytes of each format for a [rows, columns] float32 array, kEmbeddingHeaderBytes long.
inline constexpr size_t kEmbeddingHeaderBytes = 256;
std::string npy_header(int64_t rows, int64_t columns);
std::string safetensors_header(int64_t rows, int64_t columns);

}  // namespace fastnn::inference
