// CIFAR-10 / CIFAR-100, binary version (https://www.cs.toronto.edu/~kriz/cifar.html).
//   CIFAR-10:  data_batch_1.bin … data_batch_5.bin → "train", test_batch.bin → "test";
//              records of <label byte><3072 pixel bytes>; names from batches.meta.txt.
//   CIFAR-100: train.bin → "train", test.bin → "test"; records of <coarse><fine><3072 pixel bytes>;
//              fine → image/class/label, coarse → image/class/coarse_label; names from
//              fine_label_names.txt and coarse_label_names.txt.
// The pixels are three 32×32 planes (R, G, B); records are RGB PNG. The input may be the folder
// holding the files or its parent (cifar-10-batches-bin/, cifar-100-binary/ are looked into).
//
// Scanning reads the label bytes of every record (sequentially, large reads); the index holds
// (file, offset) per record and the encoder preads each record when its shard needs it.
// Without its names file the classes are numbered; DatasetIndex::class_names_source says which it was.
// Errors: a missing file; a file whose size is not a multiple of the record size (FormatError naming
// file, size and the offset of the leftover bytes); names files with the wrong number of names.
// A label out of range is a bad sample: "<file>: record N at offset O: label L is outside 0..9".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "converters/source.h"

namespace fastnn::converters {

struct CifarOptions {
  std::string dir;
  bool cifar100 = false;
  std::vector<std::string> class_names;  // overrides the names file
  int png_compression_level = 6;
};

class CifarSource : public Source {
 public:
  explicit CifarSource(CifarOptions options) : options_(std::move(options)) {}
  DatasetIndex scan(const ScanOptions& options) override;
  std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const override;
  std::string describe(const DatasetIndex& index, const SampleRef& s) const override;

  static constexpr int kSide = 32;
  static constexpr int kPixelBytes = 3 * kSide * kSide;

 private:
  int label_bytes() const { return options_.cifar100 ? 2 : 1; }
  int record_bytes() const { return label_bytes() + kPixelBytes; }
  CifarOptions options_;
  std::vector<std::string> paths_;  // full paths, by DatasetIndex::files entry
};

// The parsing of CIFAR binary files, apart from the scan (also used by the fuzz target):
// a file's size as a record count (FormatError naming the path, the whole records and the bytes left
// over unless it is a positive multiple of the record size), and one record's labels (its first 1 or
// 2 bytes): "" when in range, else why not.
uint64_t cifar_record_count(uint64_t size, bool cifar100, const std::string& path);
std::string cifar_record_labels(const uint8_t* record, bool cifar100, int* fine, int* coarse);

}  // namespace fastnn::converters
