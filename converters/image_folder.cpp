#include "converters/image_folder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <oneapi/tbb/parallel_for.h>

#include "converters/file_io.h"
#include "converters/rank_group.h"
#include "core/ascii.h"
#include "core/check.h"
#include "core/folder_walk.h"
#include "core/input_file.h"
#include "core/progress.h"

namespace fastnn::converters {
namespace {

struct Candidate {
  std::string path;
  int32_t label;
  std::string problem;  // known bad before reading (not a regular file)
};

enum class Verdict { kImage, kNotImage, kBad };

// Why a file that is not JPEG or PNG is passed over, naming the format when its first bytes tell it
// (the formats people put in image folders), so that a folder of WebP photos is not a silent mystery.
std::string not_image_reason(const std::string& head, uint64_t size) {
  if (size == 0) return "empty file";
  auto at = [&head](size_t offset, std::string_view magic) {
    return head.size() >= offset + magic.size() && std::string_view(head).substr(offset, magic.size()) == magic;
  };
  auto le32 = [&head](size_t offset) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(head[offset + static_cast<size_t>(i)]);
    return v;
  };
  const char* kind = nullptr;
  if (at(0, "BM") && head.size() >= 6 && le32(2) == size) kind = "a BMP image";  // BMP: its own size at byte 2
  else if (at(0, "GIF87a") || at(0, "GIF89a")) kind = "a GIF image";
  else if (at(0, "RIFF") && at(8, "WEBP")) kind = "a WebP image";
  else if (at(0, std::string_view("II*\0", 4)) || at(0, std::string_view("MM\0*", 4))) kind = "a TIFF image";
  else if (at(4, "ftypheic") || at(4, "ftypheix") || at(4, "ftypmif1")) kind = "a HEIF image";
  else if (at(4, "ftypavif")) kind = "an AVIF image";
  if (kind) return str(kind, ": only JPEG and PNG are converted");
  return "not a JPEG or PNG image (unrecognised first bytes)";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct Checked {
  Verdict verdict = Verdict::kBad;
  uint64_t size = 0;
  std::string reason;
};

// Every rank's verdicts on every rank (item i was checked by rank i mod size).
void share_verdicts(RankGroup& group, std::vector<Checked>& checked) {
  std::vector<std::string> items(checked.size());
  for (size_t i = static_cast<size_t>(group.rank()); i < checked.size(); i += static_cast<size_t>(group.size()))
    items[i] = ItemWriter().u64(static_cast<uint64_t>(checked[i].verdict)).u64(checked[i].size).text(checked[i].reason).take();
  share_items(group, items);
  for (size_t i = 0; i < checked.size(); ++i) {
    ItemReader in(items[i]);
    checked[i].verdict = static_cast<Verdict>(in.u64());
    checked[i].size = in.u64();
    checked[i].reason = in.text();
  }
}

// One class folder and what walking it found.
struct ClassWalk {
  int32_t label = 0;
  std::string dir;
  FolderWalk walk;
};

void walk_in_order(std::vector<ClassWalk>& walks) {
  FolderWalker walker(&ImageFolderSource::has_image_extension, "not an image", /*keep_unwanted=*/true);
  for (ClassWalk& w : walks) walker.walk(w.dir, &w.walk);
}

std::string encode_walk(const FolderWalk& w) {
  ItemWriter out;
  out.u64(w.files.size());
  for (const WalkedFile& f : w.files) out.text(f.path).text(f.problem);
  out.u64(w.ignored.size());
  for (const IgnoredEntry& e : w.ignored) out.text(e.path).text(e.reason).text(e.walked_as);
  out.u64(w.folders.size());
  for (const auto& [device, inode] : w.folders) out.u64(device).u64(inode);
  return out.take();
}

FolderWalk decode_walk(std::string_view bytes) {
  ItemReader in(bytes);
  FolderWalk w;
  for (uint64_t n = in.u64(), i = 0; i < n; ++i) {
    std::string path = in.text();
    w.files.push_back({std::move(path), in.text()});
  }
  for (uint64_t n = in.u64(), i = 0; i < n; ++i) {
    std::string path = in.text();
    std::string reason = in.text();
    w.ignored.push_back({std::move(path), std::move(reason), in.text()});
  }
  for (uint64_t n = in.u64(), i = 0; i < n; ++i) {
    const uint64_t device = in.u64();
    w.folders.emplace_back(device, in.u64());
  }
  FASTNN_CHECK(in.done(), "a shared folder walk holds more than its parts");
  return w;
}

// The class folder among `dirs` holding `path` (the longest that is a prefix), or null.
const ClassWalk* holder(const std::vector<ClassWalk>& walks, const std::vector<std::string>& dirs, const std::string& path) {
  const ClassWalk* best = nullptr;
  size_t best_size = 0;
  for (size_t i = 0; i < walks.size(); ++i)
    if ((path == dirs[i] || path.starts_with(dirs[i] + "/")) && (!best || dirs[i].size() > best_size)) {
      best = &walks[i];
      best_size = dirs[i].size();
    }
  return best;
}

std::string real_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::canonical(path, ec);
  return ec ? path : p.string();
}

// A folder that class folders of two classes reach (a symbolic link in one to the other, to a folder
// inside it, or to one outside both) is walked once, with the class walked first; the other's link is
// ignored ("already walked as PATH"). That is right where the first class is the one whose folder holds
// it, and a label silently wrong otherwise: then a FormatError names both paths.
void refuse_folders_taken_by_another_class(const std::vector<ClassWalk>& walks) {
  std::vector<std::string> dirs, real_dirs;
  for (const ClassWalk& w : walks) {
    dirs.push_back(w.dir);
    real_dirs.push_back(real_path(w.dir));
  }
  for (const ClassWalk& w : walks)
    for (const IgnoredEntry& e : w.walk.ignored) {
      if (e.walked_as.empty()) continue;
      const ClassWalk* first = holder(walks, dirs, e.walked_as);      // took its images
      const ClassWalk* owner = holder(walks, real_dirs, real_path(e.walked_as));  // holds it on disk
      if (!first || first->label == w.label || (owner && owner->label == first->label)) continue;
      throw FormatError(str(e.walked_as, ": walked as part of class folder ", first->dir, " through a symbolic link, but ",
                            owner ? str("it is in class folder ", owner->dir)
                                  : str("it lies outside the class folders and ", w.dir, " reaches it too (as ", e.path, ")"),
                            ": its images would take the label of ", first->dir, "; remove the link"));
    }
}

// Why a class folder gave no file: the entries it passed over, if any.
std::string empty_class_folder(const ClassWalk& w) {
  const std::vector<IgnoredEntry>& ignored = w.walk.ignored;
  if (!ignored.empty())
    return str(w.dir, ": empty class folder (no files; ", ignored.size(), ignored.size() == 1 ? " entry" : " entries",
               " passed over, the first ", ignored.front().path, ": ", ignored.front().reason, ")");
  return str(w.dir, ": empty class folder (no files)");
}

// Walks the class folders as one process does: one walker, in order, so a folder reached from two
// class folders (a symbolic link across classes) is walked once. Under mpirun rank r walks every
// size-th class folder (listing and stat'ing the files is what costs on a network file system) and the
// walks travel to every rank. Walks that entered a common folder would differ from one process's,
// so then every rank walks them all itself: the result is one process's either way.
void walk_class_folders(std::vector<ClassWalk>& walks, RankGroup* group) {
  if (group == nullptr || group->size() == 1 || walks.size() < 2) return walk_in_order(walks);
  const size_t ranks = static_cast<size_t>(group->size());
  std::vector<std::string> items(walks.size());
  {
    FolderWalker walker(&ImageFolderSource::has_image_extension, "not an image", /*keep_unwanted=*/true);
    for (size_t i = static_cast<size_t>(group->rank()); i < walks.size(); i += ranks) {
      walker.walk(walks[i].dir, &walks[i].walk);
      items[i] = encode_walk(walks[i].walk);
    }
  }
  share_items(*group, items);
  std::set<std::pair<uint64_t, uint64_t>> entered;
  bool shared_folder = false;
  for (size_t i = 0; i < walks.size(); ++i) {
    walks[i].walk = decode_walk(items[i]);
    for (const auto& id : walks[i].walk.folders) shared_folder |= !entered.insert(id).second;
  }
  if (!shared_folder) return;
  for (ClassWalk& w : walks) w.walk = FolderWalk{};
  walk_in_order(walks);
}

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
      c.reason = not_image_reason(*head, c.size);
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
  const std::string ext = ascii_lower(std::string_view(name).substr(dot + 1));
  return ext == "jpg" || ext == "jpeg" || ext == "jpe" || ext == "jfif" || ext == "png";
}

DatasetIndex ImageFolderSource::scan(const ScanOptions& scan) {
  if (!options_.split.empty()) validate_split_name(options_.split);
  const FolderTree tree = read_folder_tree(options_.roots, options_.layout, options_.split);
  DatasetIndex index;
  index.dataset = "image-folder";
  index.class_names_source = options_.class_names_source;

  // Each split's class folders (name → folders, one per root), then one class map for all splits.
  std::vector<std::map<std::string, std::vector<std::string>>> split_classes(tree.splits.size());
  for (size_t si = 0; si < tree.splits.size(); ++si) {
    SplitIndex split;
    split.name = tree.splits[si].split;
    split.equal_shards = split.name == "train";
    // A class tree's root is listed below as the split's folder; a split tree's top level only here.
    if (si == 0 && tree.split_tree) split.ignored = tree.ignored;
    for (const std::string& folder : tree.splits[si].folders) {
      size_t found = 0;
      for (const FolderEntry& e : list_folder(folder)) {
        const std::string path = folder + "/" + e.name;
        if (e.name[0] == '.') split.ignored.push_back({path, "hidden"});
        else if (!e.is_dir) split.ignored.push_back({path, e.problem.empty() ? "not in a class folder" : e.problem});
        else split_classes[si][e.name].push_back(path), ++found;
      }
      if (found == 0) throw FormatError(str(folder, ": no class folders (expected one sub-folder per class)"));
    }
    index.splits.push_back(std::move(split));
  }
  std::map<std::string, int32_t> label_of;  // folder name → label
  if (options_.class_names.empty()) {
    for (const auto& classes : split_classes)
      for (const auto& [name, dirs] : classes) label_of.emplace(name, 0);
    for (auto& [name, label] : label_of) {
      label = static_cast<int32_t>(index.class_names.size());
      index.class_names.push_back(name);
    }
  } else {
    index.class_names = options_.class_names;
    for (size_t c = 0; c < index.class_names.size(); ++c)
      if (!label_of.emplace(index.class_names[c], static_cast<int32_t>(c)).second)
        throw ConfigError(str(options_.class_names_source, ": the class \"", index.class_names[c],
                              "\" is named twice; one class map names each class once"));
    for (const auto& classes : split_classes)
      for (const auto& [name, dirs] : classes)
        if (!label_of.count(name))
          throw FormatError(str(dirs.front(), ": class folder \"", name, "\" is not in the class map of ",
                                options_.class_names_source, " (", index.class_names.size(), " classes",
                                index.class_names.size() <= 8 ? ": " + join_names(index.class_names) : std::string(),
                                "); add it there or rename the folder"));
  }
  for (size_t si = 0; si < tree.splits.size(); ++si) scan_split(split_classes[si], label_of, scan, &index, &index.splits[si]);
  return index;
}

void ImageFolderSource::scan_split(const std::map<std::string, std::vector<std::string>>& class_dirs,
                                   const std::map<std::string, int32_t>& label_of, const ScanOptions& scan,
                                   DatasetIndex* index, SplitIndex* split) const {
  // Every regular file is a candidate (its first bytes decide whether it is an image); an entry named
  // like an image that is not a regular file is a bad sample, not ignored (docs/FORMATS.md).
  std::vector<ClassWalk> walks;
  for (const auto& [name, dirs] : class_dirs)
    for (const std::string& d : dirs) walks.push_back({label_of.at(name), d, {}});
  walk_class_folders(walks, scan.group);
  refuse_folders_taken_by_another_class(walks);
  std::vector<Candidate> candidates;
  std::map<int32_t, uint64_t> class_files;  // label → files found
  for (ClassWalk& w : walks) {
    if (w.walk.files.empty()) throw FormatError(empty_class_folder(w));
    for (WalkedFile& f : w.walk.files) candidates.push_back({std::move(f.path), w.label, std::move(f.problem)});
    class_files[w.label] += w.walk.files.size();
    for (IgnoredEntry& e : w.walk.ignored) split->ignored.push_back({std::move(e.path), std::move(e.reason)});
  }

  // Check every file in parallel; decide in sorted order so errors and the index are deterministic.
  // Under mpirun each rank opens every size-th file (on a network file system opening a file is the
  // cost), and the verdicts travel to every rank.
  const size_t ranks = scan.group ? static_cast<size_t>(scan.group->size()) : 1;
  const size_t rank = scan.group ? static_cast<size_t>(scan.group->rank()) : 0;
  const size_t mine = candidates.size() / ranks + (rank < candidates.size() % ranks ? 1 : 0);
  std::vector<Checked> checked(candidates.size());
  Progress progress(str("scan ", split->name), mine, "files");
  progress.set_silent(scan.quiet);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, mine, 16), [&](const tbb::blocked_range<size_t>& r) {
    std::string head, tail;
    for (size_t k = r.begin(); k != r.end(); ++k) {
      const size_t i = rank + k * ranks;
      checked[i] = candidates[i].problem.empty() ? check_file(candidates[i].path, options_, &head, &tail)
                                                 : Checked{Verdict::kBad, 0, candidates[i].problem};
    }
    progress.add(r.size());
  });
  progress.finish();
  if (scan.group) share_verdicts(*scan.group, checked);

  std::map<int32_t, uint64_t> good;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Checked& c = checked[i];
    if (c.verdict == Verdict::kNotImage) {
      split->ignored.push_back({candidates[i].path, c.reason});
      continue;
    }
    if (c.verdict == Verdict::kBad) {
      if (!scan.skip_bad) throw FormatError(str(candidates[i].path, ": ", c.reason));
      split->skipped.push_back({candidates[i].path, c.reason});
      continue;
    }
    SampleRef s;
    s.file = static_cast<uint32_t>(index->files.size());
    s.length = static_cast<uint32_t>(c.size);
    s.label = candidates[i].label;
    index->files.push_back(std::move(candidates[i].path));
    split->samples.push_back(s);
    index->source_bytes += c.size;
    ++good[s.label];
  }
  for (const auto& [label, files] : class_files)
    if (good[label] == 0)
      throw FormatError(str(split->name, ": class folder \"", index->class_names[label], "\" holds no usable image (",
                            files, " files, none a readable JPEG or PNG)"));
  // Listed in path order, whichever walk or check found them.
  std::sort(split->ignored.begin(), split->ignored.end(),
            [](const SkippedSample& a, const SkippedSample& b) { return a.source < b.source; });
  split->ignored_files = split->ignored.size();
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

}  // namespace fastnn::converters
