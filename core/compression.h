// Streaming zlib helpers for TFRecord files compressed as a whole (tf.data's "GZIP" / "ZLIB"):
// GZIP is deflate with a gzip wrapper (windowBits 16+15), ZLIB with a zlib wrapper (windowBits 15).
//
// Both classes work in caller-sized pieces and never allocate per call beyond zlib's own state, so
// memory stays bounded whatever the stream claims. Errors in compressed input are reported as
// strings (the caller adds file, record and offset); misuse and out-of-memory throw.
// Threading: one instance per thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/tfrecord.h"

namespace fastnn {

// zlib windowBits for a compression (kGzip or kZlib).
int zlib_window_bits(Compression c);

class Deflater {
 public:
  // level: 0..9 or -1 (zlib's default); anything else throws ConfigError.
  Deflater(Compression c, int level);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // Compresses `size` bytes, appending compressed output to *out (no flush). finish() appends the
  // end of the stream; after it the deflater must not be used again.
  void compress(const void* data, size_t size, std::string* out);
  void finish(std::string* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Inflater {
 public:
  explicit Inflater(Compression c);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  struct Result {
    size_t consumed = 0;     // input bytes used
    size_t produced = 0;     // output bytes written
    bool stream_end = false; // the end of a complete stream (one gzip member) was reached
    std::string error;       // non-empty: corrupt input (e.g. "invalid distance too far back")
  };
  // Inflates from `in` into `out` until one of them is exhausted or the stream ends.
  Result inflate(const void* in, size_t in_size, void* out, size_t out_size);
  // Ready for another stream (a following gzip member) after stream_end.
  void reset();
  // True once inflate() has seen any input: lets the caller tell "no stream at all" from "cut short".
  bool started() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn
