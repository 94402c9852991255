// Image folders: one sub-folder per class under each input root (TF-slim's flowers layout; an
// ImageNet train tree too: files may sit deeper inside a class folder). Labels are the positions of
// the class folder names in their sorted (byte order) union over all roots.
//
// Files are recognised as JPEG or PNG by their content, never by name. Hidden files and folders
// (".name") and files that are not images are skipped and counted (SplitInfo::ignored_files) — except
// that a file named like an image (.jpg .jpeg .png ...) that is not a readable, complete JPEG/PNG is a
// bad sample: an error naming the file, or skipped and listed with --skip-bad. Scanning reads each
// file's first 64 KB (header, read_image_info) and last 4 KB (end marker), in parallel. A class
// folder without any usable image is an error in either mode.
//
// Records: the file's bytes unchanged (format, size and channels from its header), unless
// resize_shorter_side asks for re-encoding (image_example.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "converters/image_example.h"
#include "converters/source.h"

namespace fastnn::convert {

struct ImageFolderOptions {
  std::vector<std::string> roots;
  std::string split = "train";   // the split all samples go to ("train" gets equal shards)
  ImageRecordOptions record;
  uint64_t max_file_bytes = uint64_t{256} << 20;
};

class ImageFolderSource : public Source {
 public:
  explicit ImageFolderSource(ImageFolderOptions options) : options_(std::move(options)) {}
  DatasetIndex scan(const ScanOptions& options) override;
  std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const override;
  std::string describe(const DatasetIndex& index, const SampleRef& s) const override;

  // True for names that promise an image (.jpg .jpeg .jpe .jfif .png, any case).
  static bool has_image_extension(const std::string& name);

 private:
  ImageFolderOptions options_;
};

// Shared with base64-TSV: records from encoded image bytes of arbitrary files.
class EncodedImageEncoder : public SampleEncoder {
 public:
  EncodedImageEncoder(const std::vector<std::string>* paths, ImageRecordOptions options)
      : paths_(paths), maker_(options) {}
  void encode(const SampleRef& s, std::string* record, RecordInfo* info) override;

 private:
  const std::vector<std::string>* paths_;
  ImageRecordMaker maker_;
  std::string bytes_;
};

}  // namespace fastnn::convert
