// What `fastnn predict` classifies: the --input arguments resolved, in order, into one stream of
// records (tf.train.Example bytes, the form the preprocessing reads), each with where it came from.
//
// An argument is
//   - a folder with manifest.json: that shard set's split (`split`, else the held-out one: validation
//     if the manifest has it, else test), its files in the manifest's order, every record;
//   - another folder: every image file under it (.jpg .jpeg .png, any case; hidden entries skipped),
//     recursively, sorted by path, walked as `convert image-folder` walks (core/folder_walk.h: linked
//     folders followed, each folder once); an image-named entry that is not a regular file (a FIFO, a
//     dangling link) is a bad input, reported like an undecodable image, never left out in silence;
//   - a file: TFRecord when its name ends in .tfrecord (optionally .gz/.zz) or is a shard name
//     (<split>-NNNNN-of-NNNNN...); base64-TSV (the converter's format, docs/FORMATS.md) when it ends in
//     .tsv; else an image file.
// A base64-TSV line is `base64(image)<TAB>label` or `label<TAB>base64(image)` (told apart per line: the
// field of decimal digits is the label), strict base64 (core/base64.h), "\r\n" accepted; blank lines are
// passed over (they still count in line numbers). Each line is an item with `line` its 1-based number
// and the label carried into the Example (Prediction::target); a line that is not two such fields is a
// bad input naming file and line. Lines longer than kMaxTsvLineBytes are fatal (never buffered whole). A folder given explicitly may still hold no image
//     (ConfigError naming it): an empty input is a mistake, not a result.
// An image file becomes an in-memory Example of its bytes (image/encoded, image/format from its magic
// bytes, label 0): the eval preprocessing then treats it exactly as a converted record. Images larger
// than kMaxImageFileBytes are bad inputs (reported like an undecodable one), never read whole.
// Errors: IoError / FormatError naming the file (and record index and offset for TFRecords).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fastnn::inference {

inline constexpr uint64_t kMaxImageFileBytes = uint64_t{256} << 20;
inline constexpr size_t kMaxTsvLineBytes = size_t{64} << 20;  // the converter's default --max-line-bytes

struct PredictInput {
  enum class Kind { kImage, kTFRecord, kBase64Tsv };
  Kind kind = Kind::kImage;
  std::string path;
  int64_t records = -1;  // TFRecord: the manifest's count when known, else -1
  std::string problem;   // image: why it cannot be read, known before reading (a FIFO, a dangling link)
};

struct InputItem {
  std::string path;
  int64_t record = -1;  // TFRecord: index of the record in its file; image: -1
  int64_t line = -1;    // base64-TSV: 1-based line number; else -1
  std::string bytes;    // serialized tf.train.Example; empty with `error` set for a bad image file
  std::string error;
};

// The arguments resolved into files, in the order they will be read.
std::vector<PredictInput> resolve_inputs(const std::vector<std::string>& args, const std::string& split = {});
// Sum of the records (TFRecords with known counts) and images; 0 when some count is unknown.
uint64_t known_total(const std::vector<PredictInput>& inputs);

// Reads the inputs one item at a time. A TFRecord error (CRC, framing, truncation) throws.
class InputStream {
 public:
  explicit InputStream(std::vector<PredictInput> inputs);
  ~InputStream();
  // content=false: where the item is and nothing else (no image file read, no TSV line decoded), for
  // the items another rank classifies.
  bool next(InputItem* item, bool content = true);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The Example an image file's bytes become (see above); a base64-TSV line's carries its label.
std::string image_example(const std::string& bytes, int64_t label = 0);

}  // namespace fastnn::inference
