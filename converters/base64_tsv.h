// base64-TSV files (PaddlePaddle PLSC's data format): one sample per line,
//   base64(image bytes) <TAB> label        or, with label_first,   label <TAB> base64(image bytes)
// "\r\n" line ends are accepted; blank lines are skipped and counted. Labels are decimal integers;
// with num_classes they must be below it, without it the class count is the largest label + 1 —
// which, when most classes then hold no sample (one outlier label), is warned about, and refused
// above kMaxSparseInferredClasses classes naming the label's line and pointing to --num-classes.
// Input files are only ever read.
//
// Scanning streams each file in blocks (a serial reader cutting whole lines, parallel validation, a
// serial in-order collector), so memory is a few blocks whatever the file size. Each line is fully
// validated: two fields, the label, strict base64 (core/base64.h), and the decoded image's header and
// end marker (check_encoded_image). The index keeps (file, offset and length of the base64 field,
// label, line); the encoder preads and decodes the field again when its shard is written.
// A bad line is an error "<file>:<line>: <reason>", or skipped and listed with --skip-bad. A line
// longer than max_line_bytes is an error in either mode (it would need an unbounded buffer).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "converters/image_example.h"
#include "converters/source.h"

namespace fastnn::converters {

// --max-line-bytes may not exceed this (line offsets in a scan block are 32-bit).
inline constexpr uint64_t kMaxLineBytesLimit = uint64_t{1} << 30;
// Without --num-classes the class count is the largest label + 1; when most of those classes would be
// empty that is warned about, and refused above this many classes (see scan()).
inline constexpr int64_t kMaxSparseInferredClasses = 65536;

struct Base64TsvOptions {
  std::vector<std::string> files;
  bool label_first = false;
  int64_t num_classes = 0;               // 0: largest label + 1
  std::vector<std::string> class_names;  // empty: "0".."n-1"
  std::string split = "train";
  ImageRecordOptions record;
  uint64_t max_line_bytes = uint64_t{64} << 20;
  size_t block_bytes = size_t{8} << 20;  // scan read size
};

class Base64TsvSource : public Source {
 public:
  explicit Base64TsvSource(Base64TsvOptions options) : options_(std::move(options)) {}
  DatasetIndex scan(const ScanOptions& options) override;
  std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const override;
  std::string describe(const DatasetIndex& index, const SampleRef& s) const override;

 private:
  Base64TsvOptions options_;
};

// One line (without its '\n'; a trailing '\r' is dropped) fully validated: two tab-separated fields,
// the label (parse_label), strict base64, the decoded image's header and end marker (decoded into
// *scratch). On kGood, b64_pos/b64_length locate the base64 field in the line; on kBad, reason says why.
struct TsvLine {
  enum Status { kGood, kBlank, kBad } status = kBad;
  int32_t label = 0;
  size_t b64_pos = 0, b64_length = 0;
  size_t image_bytes = 0;
  std::string reason;
};
TsvLine parse_tsv_line(std::string_view line, bool label_first, int64_t max_label, const ImageLimits& limits,
                       std::string* scratch);

// Parses a label field: decimal digits only, at most `max_label`. Returns false with a reason.
bool parse_label(std::string_view field, int64_t max_label, int32_t* label, std::string* why);

}  // namespace fastnn::converters
