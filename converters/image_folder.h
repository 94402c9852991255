// Image folders: one sub-folder per class (TF-slim's flowers layout; an ImageNet train tree too: files
// may sit deeper inside a class folder), either directly under each input root or inside split folders
// `root/{train,val,test}/<class>` (torchvision's layout: converted as one output with those splits;
// converters/folder_layout.h says how the two are told apart and what is refused).
//
// One class map for every split: labels are the positions of the class folder names in their sorted
// (byte order) union over all roots and splits, or, when `class_names` pins them (--class-names FILE,
// --labels-from DIR), the positions of the folder names in that list; a folder whose name is not in
// it is an error naming the folder and the map's source, and a pinned class without a folder simply
// has no sample (a split converted on its own keeps every id).
//
// Files are recognised as JPEG or PNG by their content, never by name. Hidden files and folders
// (".name") and files that are not images are passed over, counted (SplitInfo::ignored_files) and
// named with the reason (SplitIndex::ignored: "hidden", "a WebP image: only JPEG and PNG are
// converted") — except that a file named like an image (.jpg .jpeg .png ...) that is not a readable,
// complete JPEG/PNG is a bad sample: an error naming the file, or skipped and listed with --skip-bad.
// Scanning reads each file's first 64 KB (header, read_image_info) and last 4 KB (end marker), in
// parallel. A class folder without any usable image is an error in either mode.
//
// Records: the file's bytes unchanged (format, size and channels from its header), unless
// resize_shorter_side asks for re-encoding (image_example.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "converters/folder_layout.h"
#include "converters/image_example.h"
#include "converters/source.h"

namespace fastnn::converters {

struct ImageFolderOptions {
  std::vector<std::string> roots;
  std::string split;             // a class tree's split ("" = "train"; "train" gets equal shards)
  FolderLayout layout = FolderLayout::kAuto;
  std::vector<std::string> class_names;  // pinned class map (empty: the sorted folder names)
  std::string class_names_source;        // where the pinned names came from, for messages and the manifest
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
  // One split's samples from its class folders (name → folders), labelled by `label_of`.
  void scan_split(const std::map<std::string, std::vector<std::string>>& class_dirs,
                  const std::map<std::string, int32_t>& label_of, const ScanOptions& scan, DatasetIndex* index,
                  SplitIndex* split) const;
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

}  // namespace fastnn::converters
