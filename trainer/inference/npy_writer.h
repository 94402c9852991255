// A float32 2-D .npy file (NumPy format 1.0: numpy.load reads it) written row by row, for
// `fastnn predict --embeddings`: the row count is only known at the end, so the header is written with
// room for any count and rewritten in place by commit(). The file appears complete or not at all
// (written under "<path>.fastnn-tmp", renamed by commit(); the destructor removes an uncommitted one).
// Threading: one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace fastnn::inference {

class NpyWriter {
 public:
  NpyWriter(std::string path, int64_t columns);
  ~NpyWriter();
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;

  void add_row(std::span<const float> row);  // Error unless row.size() == columns
  void commit();
  int64_t rows() const { return rows_; }

 private:
  void write_header();
  std::string path_, tmp_;
  int64_t columns_, rows_ = 0;
  std::FILE* f_ = nullptr;
};

// The header bytes (magic, version, length, dict padded to kNpyHeaderBytes) for a [rows, columns] <f4 array.
inline constexpr size_t kNpyHeaderBytes = 128;
std::string npy_header(int64_t rows, int64_t columns);

}  // namespace fastnn::inference
