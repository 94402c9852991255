// MNIST-format datasets (MNIST, Fashion-MNIST, KMNIST, ...): a folder of IDX files
//   train-images-idx3-ubyte, train-labels-idx1-ubyte  → split "train"
//   t10k-images-idx3-ubyte,  t10k-labels-idx1-ubyte   → split "test" (optional)
// each optionally gzip-compressed (".gz"), "-idx" or ".idx" before the type. Records: 1-channel PNG.
// Class names: the given ones, else the dataset's real names as converters/known_classes.h decides
// (Fashion-MNIST's, MNIST's digits, or numbers), with DatasetIndex::class_names_source saying which.
//
// Errors (FormatError naming the file and offset): any IDX problem (idx.h), a missing file, image and
// label counts that differ. A label >= num_classes is a bad sample (error, or skipped with
// --skip-bad, reported as "<labels file>#<index>").
//
// Planning needs only the labels, so scan() reads the labels and the image files' headers, and leaves
// inflating the image files to background threads; an encoder waits for its file on first use. The
// converter writes the smallest split first, so a large gzip image file inflates while the small
// split is encoded. A problem found only while inflating (a truncated file) fails the conversion from
// the writer, with the same message.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "converters/idx.h"
#include "converters/known_classes.h"
#include "converters/source.h"

namespace fastnn::converters {

struct MnistOptions {
  std::string dir;
  int num_classes = 10;
  std::vector<std::string> class_names;  // given names; empty: the dataset's (known_classes.h)
  MnistDataset dataset = MnistDataset::kAuto;
  int png_compression_level = 6;
};

class MnistSource : public Source {
 public:
  explicit MnistSource(MnistOptions options) : options_(std::move(options)) {}
  DatasetIndex scan(const ScanOptions& options) override;
  std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const override;

  // The path of an IDX file in `dir` under any accepted spelling, or "" if there is none.
  // `stem` is e.g. "train-images", `type` "idx3-ubyte".
  static std::string find_idx_file(const std::string& dir, const std::string& stem, const std::string& type);

 private:
  MnistOptions options_;
  // By DatasetIndex::files entry; ready when the background inflate is done.
  std::vector<std::shared_future<std::shared_ptr<const IdxArray>>> images_;
};

// Class names: `names` if given (must have num_classes entries), else "0".."n-1".
std::vector<std::string> default_class_names(int num_classes, const std::vector<std::string>& names);

}  // namespace fastnn::converters
