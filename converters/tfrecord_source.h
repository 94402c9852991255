// Existing TFRecord shards (TF-slim's flowers_train_00000-of-00005.tfrecord, cifar10_train.tfrecord,
// ImageNet's train-00000-of-01024, FastNN's or fastnn's own) as a conversion source: `fastnn convert
// tfrecord` re-shards them into balanced, globally shuffled shards with a manifest.
//
// Memory stays bounded whatever the input size: scan() is an index pass that reads every record once
// (both CRCs checked, the Example parsed with converters/foreign_record.h's key spellings, the image
// header and end marker checked) and keeps 24 bytes per record (file, offset, length, label); the
// planner shuffles that index and the writer copies records in the planned order by positional
// reads (pread of one frame, CRCs checked again, so a file changed since the scan is an error, not
// silent garbage). Input shards must be plain (uncompressed) TFRecord files: offsets inside a GZIP
// stream cannot be read at random; gunzip them first.
//
// Splits: --split names one split for every input; otherwise each file's split is the "train",
// "validation" or "test" ("val") token of its name (core/dataset_files.h), and a file without one is
// a ConfigError naming it. Classes: the labels file (default: labels.txt beside the first input, when
// there is one; TF-slim's "id:name" lines), else --num-classes names 0..n-1, else the largest label
// + 1. labels_offset is subtracted from every label (and drops that many names from the front of the
// labels file), as FastNN's labels_offset. A label outside the classes is a bad sample.
//
// Records written: fastnn's (../shared/DESIGN.md "Records"): the image bytes unchanged, image/format
// from the bytes (a "jpg" that is really a PNG is written as png), geometry from the image header
// (raw: from the record). Other features are not copied. Bad samples are errors naming the file and
// the record's byte offset, or skipped and listed with --skip-bad (a framing or CRC error skips the
// rest of that file: nothing after it can be trusted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "converters/foreign_record.h"
#include "converters/source.h"

namespace fastnn::converters {

struct TFRecordSourceOptions {
  std::vector<std::string> patterns;  // globs or file names (core/dataset_files.h)
  std::string split;                  // "" = from each file's name
  std::string labels_file;            // "" = labels.txt beside the first input, if any
  int64_t num_classes = 0;            // 0 = the labels file's count, else largest label + 1
  int64_t labels_offset = 0;
  ImageLimits limits;
};

class TFRecordSource : public Source {
 public:
  explicit TFRecordSource(TFRecordSourceOptions options)
      : options_(std::move(options)), parser_(options_.limits) {}
  DatasetIndex scan(const ScanOptions& options) override;
  std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const override;
  // "<file>#<offset of the record's frame>"
  std::string describe(const DatasetIndex& index, const SampleRef& s) const override;

 private:
  TFRecordSourceOptions options_;
  ForeignRecordParser parser_;
};

}  // namespace fastnn::converters
