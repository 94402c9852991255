#include "trainer/inference/npy_writer.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/check.h"

namespace fastnn::inference {

std::string npy_header(int64_t rows, int64_t columns) {
  static_assert(std::endian::native == std::endian::little, "the .npy data is written as little-endian <f4");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(columns) + "), }";
  const size_t fixed = 10;  // magic (6), version (2), header length (2)
  FASTNN_CHECK(fixed + dict.size() + 1 <= kNpyHeaderBytes, "npy header too long");
  dict.append(kNpyHeaderBytes - fixed - dict.size() - 1, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  const auto len = static_cast<uint16_t>(dict.size());
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

NpyWriter::NpyWriter(std::string path, int64_t columns) : path_(std::move(path)), tmp_(path_ + ".fastnn-tmp"), columns_(columns) {
  FASTNN_CHECK(columns_ > 0, "npy: no column");
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw IoError(str(tmp_, ": cannot create: ", std::strerror(errno)));
  write_header();
}

NpyWriter::~NpyWriter() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void NpyWriter::write_header() {
  const std::string h = npy_header(rows_, columns_);
  if (std::fwrite(h.data(), 1, h.size(), f_) != h.size()) throw IoError(str(tmp_, ": write failed: ", std::strerror(errno)));
}

void NpyWriter::add_row(std::span<const float> row) {
  FASTNN_CHECK(static_cast<int64_t>(row.size()) == columns_, "npy: a row of ", row.size(), " values, the file has ", columns_, " columns");
  if (std::fwrite(row.data(), sizeof(float), row.size(), f_) != row.size())
    throw IoError(str(tmp_, ": write failed: ", std::strerror(errno)));
  ++rows_;
}

void NpyWriter::commit() {
  FASTNN_CHECK(f_, "npy: committed twice");
  bool ok = std::fseek(f_, 0, SEEK_SET) == 0;
  if (ok) write_header();
  ok = ok && std::fflush(f_) == 0 && std::ferror(f_) == 0;
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (!ok || rc != 0) {
    std::remove(tmp_.c_str());
    throw IoError(str(tmp_, ": write failed"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw IoError(str(path_, ": cannot rename into place: ", ec.message()));
}

}  // namespace fastnn::inference
