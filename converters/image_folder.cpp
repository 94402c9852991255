#include "converters/image_folder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <oneapi/tbb/parallel_for.h>

#include "converters/file_io.h"
#include "core/check.h"
#include "core/folder_walk.h"
#include "core/input_file.h"
#include "core/progress.h"

namespace fastnn::convert {
namespace {

struct Candidate {
  std::string path;
  int32_t label;
  std::string problem;  // known bad before reading (not a regular file)
};

enum class Verdict { kImage, kNotImage, kBad };

struct Checked {
  Verdict verdict = Verdict::kBad;
  uint64_t size = 0;
  std::string reason;
};

Checked check_file(const std::string& path, const ImageFolderOptions& o, std::string* head, std::string* tail) {
  Checked c;
  const std::string name = path.substr(path.rfind('/') + 1);
  const bool looks_image = ImageFolderSource::has_image_extension(name);
  try {
    Fd fd(path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) throw_io_error(path, "stat");
    c.size = static_cast<uint64_t>(st.st_size);
    head->resize(std::min<uint64_t>(c.size, kImageHeadBytes));
    read_exact(fd.get(), 0, head->data(), head->size(), path);
    if (detect_image_format(*head) == ImageFormat::kUnknown) {
      c.verdict = looks_image ? Verdict::kBad : Verdict::kNotImage;
      c.reason = c.size == 0 ? "empty file" : "not a JPEG or PNG image (unrecognised first bytes)";
      return c;
    }
    if (c.size > o.max_file_bytes || c.size > UINT32_MAX) {
      c.reason = str(c.size, " bytes, more than the limit of ", o.max_file_bytes);
      return c;
    }
    const uint64_t tail_bytes = std::min<uint64_t>(c.size, kImageTailBytes);
    tail->resize(tail_bytes);
    read_exact(fd.get(), c.size - tail_bytes, tail->data(), tail_bytes, path);
    try {
      check_encoded_image(*head, *tail, c.size, o.record.limits);
    } catch (const FormatError&) {
      // A header beyond the first 64 KB (large EXIF/ICC segments): try the whole file once.
      if (head->size() == c.size) throw;
      head->resize(c.size);
      read_exact(fd.get(), 0, head->data(), c.size, path);
      check_encoded_image(*head, *tail, c.size, o.record.limits);
    }
    c.verdict = Verdict::kImage;
  } catch (const FormatError& e) {
    c.verdict = Verdict::kBad;
    c.reason = e.what();
  }
  return c;
}

}  // namespace

bool ImageFolderSource::has_image_extension(const std::string& name) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == "jpg" || ext == "jpeg" || ext == "jpe" || ext == "jfif" || ext == "png";
}

DatasetIndex ImageFolderSource::scan(const ScanOptions& scan) {
  if (options_.roots.empty()) throw ConfigError("image-folder needs at least one --input folder");
  validate_split_name(options_.split);
  DatasetIndex index;
  index.dataset = "image-folder";
  SplitIndex split;
  split.name = options_.split;
  split.equal_shards = options_.split == "train";

  // Classes: the sorted union of the roots' non-hidden sub-folders.
  std::map<std::string, std::vector<std::string>> class_dirs;  // name → folders (one per root)
  for (std::string root : options_.roots) {
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    struct stat st;
    if (::stat(root.c_str(), &st) != 0) throw_io_error(root, "open input folder");
    if (!S_ISDIR(st.st_mode)) throw ConfigError(str(root, ": an image-folder input must be a folder of class folders"));
    for (const FolderEntry& e : list_folder(root)) {
      if (e.name[0] != '.' && e.is_dir) class_dirs[e.name].push_back(root + "/" + e.name);
      else ++split.ignored_files;
    }
  }
  if (class_dirs.empty()) throw FormatError(str(options_.roots.front(), ": no class folders (expected one sub-folder per class)"));

  // Every regular file is a candidate (its first bytes decide whether it is an image); an entry named
  // like an image that is not a regular file is a bad sample, not ignored (docs/FORMATS.md).
  std::vector<Candidate> candidates;
  std::vector<uint64_t> per_class_files;
  FolderWalker walker(&ImageFolderSource::has_image_extension, "not an image", /*keep_unwanted=*/true);
  FolderWalk walked;
  for (const auto& [name, dirs] : class_dirs) {
    const int32_t label = static_cast<int32_t>(index.class_names.size());
    index.class_names.push_back(name);
    size_t before = candidates.size();
    for (const std::string& d : dirs) {
      size_t in_dir = candidates.size();
      walked.files.clear();
      walker.walk(d, &walked);
      for (WalkedFile& f : walked.files) candidates.push_back({std::move(f.path), label, std::move(f.problem)});
      if (candidates.size() == in_dir) throw FormatError(str(d, ": empty class folder (no files)"));
    }
    per_class_files.push_back(candidates.size() - before);
  }
  split.ignored_files += walked.ignored.size();

  // Check every file in parallel; decide in sorted order so errors and the index are deterministic.
  std::vector<Checked> checked(candidates.size());
  Progress progress("scan", candidates.size(), "files");
  progress.set_silent(scan.quiet);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, candidates.size(), 16), [&](const tbb::blocked_range<size_t>& r) {
    std::string head, tail;
    for (size_t i = r.begin(); i != r.end(); ++i)
      checked[i] = candidates[i].problem.empty() ? check_file(candidates[i].path, options_, &head, &tail)
                                                 : Checked{Verdict::kBad, 0, candidates[i].problem};
    progress.add(r.size());
  });
  progress.finish();

  std::vector<uint64_t> good(index.class_names.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Checked& c = checked[i];
    if (c.verdict == Verdict::kNotImage) {
      ++split.ignored_files;
      continue;
    }
    if (c.verdict == Verdict::kBad) {
      if (!scan.skip_bad) throw FormatError(str(candidates[i].path, ": ", c.reason));
      split.skipped.push_back({candidates[i].path, c.reason});
      continue;
    }
    SampleRef s;
    s.file = static_cast<uint32_t>(index.files.size());
    s.length = static_cast<uint32_t>(c.size);
    s.label = candidates[i].label;
    index.files.push_back(std::move(candidates[i].path));
    split.samples.push_back(s);
    index.source_bytes += c.size;
    ++good[s.label];
  }
  for (size_t c = 0; c < good.size(); ++c)
    if (good[c] == 0)
      throw FormatError(str("class folder \"", index.class_names[c], "\" holds no usable image (",
                            per_class_files[c], " files, none a readable JPEG or PNG)"));
  index.splits.push_back(std::move(split));
  return index;
}

std::unique_ptr<SampleEncoder> ImageFolderSource::make_encoder(const DatasetIndex& index) const {
  return std::make_unique<EncodedImageEncoder>(&index.files, options_.record);
}

std::string ImageFolderSource::describe(const DatasetIndex& index, const SampleRef& s) const {
  return index.files[s.file];
}

void EncodedImageEncoder::encode(const SampleRef& s, std::string* record, RecordInfo* info) {
  const std::string& path = (*paths_)[s.file];
  Fd fd(path);
  bytes_.resize(s.length);
  read_exact(fd.get(), s.offset, bytes_.data(), s.length, path);
  maker_.make(bytes_, s.label, record, info);
}

}  // namespace fastnn::convert
