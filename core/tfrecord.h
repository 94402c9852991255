// TFRecord files: the framing tf.data's TFRecordDataset reads.
//
// Each record is: uint64 length (little endian), uint32 masked_crc32c(length bytes),
// length bytes of data, uint32 masked_crc32c(data). Files may be compressed as a whole with GZIP or
// ZLIB (tf.data's compression_type "GZIP" / "ZLIB"); offsets reported below are always offsets in
// the uncompressed record stream (for plain files, the byte offset in the file).
//
// Threading: a reader or writer is used by one thread at a time; different instances are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fastnn {

enum class Compression { kNone, kGzip, kZlib };

// "" / "none" / "NONE" -> kNone, "gzip" / "GZIP" -> kGzip, "zlib" / "ZLIB" -> kZlib; anything else
// throws ConfigError listing the choices.
Compression parse_compression(std::string_view name);
const char* compression_name(Compression c);  // "none", "gzip", "zlib"
// Guesses a file's compression from its first bytes: the GZIP magic 1f 8b; a valid ZLIB header
// (CMF/FLG check) whose stream inflates; otherwise plain. Throws IoError if unreadable.
Compression detect_compression(const std::string& path);

// Appends one framed record to `out` (no compression): the exact bytes a plain TFRecord file holds.
void append_tfrecord_frame(std::string* out, std::string_view record);
// Bytes a record of `data_size` takes in a plain TFRecord file (8 + 4 + data_size + 4).
constexpr uint64_t tfrecord_frame_size(uint64_t data_size) { return data_size + 16; }

// Writes records to a file. Buffered; close() flushes and reports errors (the destructor closes too,
// but swallows errors, so call close()).
class TFRecordWriter {
 public:
  TFRecordWriter(const std::string& path, Compression compression = Compression::kNone,
                 int compression_level = 6);
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::string_view record);
  // Hands every buffered frame to the file now (one write(2)): a reader of a plain file then sees
  // every record written so far (TensorBoard event files). With compression, output the compressor
  // still holds appears only at close().
  void flush();
  void close();
  uint64_t records_written() const;
  // Uncompressed bytes written so far (frames included).
  uint64_t bytes_written() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TFRecordReaderOptions {
  // kNone means plain; use detect_compression() for "whatever the file is".
  Compression compression = Compression::kNone;
  // Verify both CRCs of every record (length CRC is always verified: a bad length must never be
  // trusted). Turning data verification off is for benchmarks and `--no-verify`.
  bool verify_data_crc = true;
  // A record longer than this is an error, never an allocation.
  uint64_t max_record_bytes = uint64_t{1} << 30;
  // Size of each read() from the file (reads are large and sequential).
  size_t read_buffer_bytes = size_t{1} << 20;
};

// Reads records sequentially. Every problem throws FormatError naming the file, the record index
// and the byte offset of the record's start, e.g.
//   "shard-00003.tfrecord: record 17 at offset 52011: data CRC mismatch (stored 0x..., computed 0x...)"
// Truncation (a partial header or a record cut short) is an error; a clean end of file is not.
class TFRecordReader {
 public:
  TFRecordReader(const std::string& path, const TFRecordReaderOptions& options = {});
  // Reads from memory (a cached or downloaded file); `name` is used in error messages.
  // The bytes must outlive the reader. Same framing; compression per options.
  TFRecordReader(std::string_view bytes, std::string name, const TFRecordReaderOptions& options = {});
  ~TFRecordReader();
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // Next record's data; false at a clean end of file. The view stays valid until the next call.
  bool next(std::string_view* record);
  // Index of the record last returned by next() (0-based) and the offset of its frame start.
  uint64_t record_index() const;
  uint64_t record_offset() const;
  const std::string& name() const;
  // Compressed/plain bytes consumed from the source so far (for MB/s).
  uint64_t source_bytes_read() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn
