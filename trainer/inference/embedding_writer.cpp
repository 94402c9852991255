#include "trainer/inference/embedding_writer.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace fastnn::inference {

static_assert(std::endian::native == std::endian::little, "the data is written as little-endian float32");

std::string npy_header(int64_t rows, int64_t columns) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(columns) + "), }";
  const size_t fixed = 10;  // magic (6), version (2), header length (2)
  FASTNN_CHECK(fixed + dict.size() + 1 <= kEmbeddingHeaderBytes, "npy header too long");
  dict.append(kEmbeddingHeaderBytes - fixed - dict.size() - 1, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  const auto len = static_cast<uint16_t>(dict.size());
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

std::string safetensors_header(int64_t rows, int64_t columns) {
  // 8 bytes of little-endian header length, then the JSON header padded with spaces so that the data
  // starts at kEmbeddingHeaderBytes (8-byte aligned, as the format recommends).
  std::string json = "{\"__metadata__\":{\"format\":\"fastnn-embeddings\"},\"embeddings\":{\"dtype\":\"F32\",\"shape\":[" +
                     std::to_string(rows) + "," + std::to_string(columns) + "],\"data_offsets\":[0," +
                     std::to_string(rows * columns * static_cast<int64_t>(sizeof(float))) + "]}}";
  FASTNN_CHECK(8 + json.size() <= kEmbeddingHeaderBytes, "safetensors header too long");
  json.append(kEmbeddingHeaderBytes - 8 - json.size(), ' ');
  std::string h(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i, n >>= 8) h[static_cast<size_t>(i)] = static_cast<char>(n & 0xff);
  return h + json;
}

EmbeddingFormat embedding_format(const std::string& path) {
  if (path.ends_with(".npy")) return EmbeddingFormat::kNpy;
  if (path.ends_with(".safetensors")) return EmbeddingFormat::kSafetensors;
  throw ConfigError(str("--embeddings ", path, ": name it *.npy or *.safetensors (the format written follows the extension)"));
}

EmbeddingWriter::EmbeddingWriter(std::string path, int64_t columns, std::vector<std::string> inputs)
    : format_(embedding_format(path)), columns_(columns) {
  FASTNN_CHECK(columns_ > 0, "embeddings: no column");
  file_ = std::make_unique<OutputFile>(std::move(path), OutputFile::Options{.inputs = std::move(inputs)});
  write_header();
}

EmbeddingWriter::~EmbeddingWriter() = default;

void EmbeddingWriter::write_header() {
  file_->write(format_ == EmbeddingFormat::kNpy ? npy_header(rows_, columns_) : safetensors_header(rows_, columns_));
}

void EmbeddingWriter::add_row(std::span<const float> row) {
  FASTNN_CHECK(static_cast<int64_t>(row.size()) == columns_, "embeddings: a row of ", row.size(), " values, the file has ", columns_, " columns");
  file_->write(std::string_view(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(float)));
  ++rows_;
}

void EmbeddingWriter::commit() {
  // A failed seek or header write throws with the file still open: the OutputFile removes the temporary.
  if (std::fseek(file_->get(), 0, SEEK_SET) != 0) throw_io_error(file_->path(), "seek");
  write_header();
  file_->commit();
}

}  // namespace fastnn::inference
