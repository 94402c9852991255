#include "converters/mnist.h"

#include <sys/stat.h>

#include <future>
#include <oneapi/tbb/parallel_for.h>

#include "converters/file_io.h"
#include "converters/image_example.h"
#include "core/check.h"
#include "core/example.h"
#include "core/image.h"

namespace fastnn::converters {
namespace {

constexpr uint64_t kMaxSide = 4096;

std::string basename_of(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

using ImageFuture = std::shared_future<std::shared_ptr<const IdxArray>>;

class MnistEncoder : public SampleEncoder {
 public:
  MnistEncoder(const std::vector<ImageFuture>* images, int level)
      : images_(images), ready_(images->size(), nullptr), level_(level) {}
  void encode(const SampleRef& s, std::string* record, RecordInfo* info) override {
    if (!ready_[s.file]) ready_[s.file] = (*images_)[s.file].get().get();  // waits for the inflate once
    const IdxArray& a = *ready_[s.file];
    FASTNN_CHECK(s.offset < a.count(), a.name, ": image ", s.offset, " is beyond the ", a.count(), " images read");
    const int rows = static_cast<int>(a.dims[1]), cols = static_cast<int>(a.dims[2]);
    png_ = encode_png(a.item(s.offset), cols, rows, 1, level_);
    serialize_image_example(png_, "png", rows, cols, 1, s.label, -1, record);
    *info = {"png", rows, cols, 1};
  }

 private:
  const std::vector<ImageFuture>* images_;
  std::vector<const IdxArray*> ready_;
  int level_;
  std::string png_;
};

}  // namespace

std::vector<std::string> default_class_names(int num_classes, const std::vector<std::string>& names) {
  if (!names.empty()) {
    if (static_cast<int>(names.size()) != num_classes)
      throw ConfigError(str(names.size(), " class names given for ", num_classes, " classes"));
    return names;
  }
  std::vector<std::string> out;
  for (int i = 0; i < num_classes; ++i) out.push_back(std::to_string(i));
  return out;
}

std::string MnistSource::find_idx_file(const std::string& dir, const std::string& stem, const std::string& type) {
  for (const char* sep : {"-", "."})
    for (const char* ext : {"", ".gz"}) {
      std::string p = dir + "/" + stem + sep + type + ext;
      if (path_exists(p)) return p;
    }
  return "";
}

DatasetIndex MnistSource::scan(const ScanOptions& scan) {
  if (options_.num_classes < 1 || options_.num_classes > 256)
    throw ConfigError(str("--num-classes must be in 1..256 for IDX labels, not ", options_.num_classes));
  struct stat st;
  if (::stat(options_.dir.c_str(), &st) != 0) throw_io_error(options_.dir, "open input folder");
  if (!S_ISDIR(st.st_mode)) throw ConfigError(str(options_.dir, ": the mnist input must be a folder of IDX files"));

  DatasetIndex index;
  index.dataset = "mnist";
  if (!options_.class_names.empty()) {
    index.class_names = default_class_names(options_.num_classes, options_.class_names);
  } else {
    NamedClasses named = mnist_class_names(options_.dir, options_.dataset, options_.num_classes);
    index.class_names = std::move(named.names);
    index.class_names_source = std::move(named.source);
  }
  images_.clear();
  IdxLimits lim;
  lim.max_item_bytes = kMaxSide * kMaxSide;

  // Find the files of both splits, then inflate all of them at once (gzip streams are serial; the
  // four files are not).
  struct SplitFiles {
    std::string split, img_path, lbl_path;
    std::shared_ptr<IdxArray> images, labels;
  };
  std::vector<SplitFiles> found;
  for (const auto& [split, stem] : {std::pair{"train", "train"}, std::pair{"test", "t10k"}}) {
    std::string img_path = find_idx_file(options_.dir, std::string(stem) + "-images", "idx3-ubyte");
    std::string lbl_path = find_idx_file(options_.dir, std::string(stem) + "-labels", "idx1-ubyte");
    if (img_path.empty() && lbl_path.empty() && std::string(split) == "test") continue;  // test is optional
    if (img_path.empty())
      throw FormatError(str(options_.dir, ": no ", stem, "-images-idx3-ubyte (or .gz) next to its labels"));
    if (lbl_path.empty())
      throw FormatError(str(options_.dir, ": no ", stem, "-labels-idx1-ubyte (or .gz) next to its images"));
    found.push_back({split, img_path, lbl_path, nullptr, nullptr});
  }
  // Labels and image headers now (planning needs no pixels); image data in the background.
  tbb::parallel_for(size_t{0}, 2 * found.size(), [&](size_t j) {
    SplitFiles& f = found[j / 2];
    if (j % 2 == 0) f.images = std::make_shared<IdxArray>(read_idx_header(f.img_path, 3, lim));
    else f.labels = std::make_shared<IdxArray>(read_idx(f.lbl_path, 1, lim));
  });

  for (SplitFiles& f : found) {
    const std::string& split = f.split;
    const std::string& img_path = f.img_path;
    const std::string& lbl_path = f.lbl_path;
    std::shared_ptr<IdxArray> images = f.images, labels = f.labels;
    if (images->dims[1] > kMaxSide || images->dims[2] > kMaxSide)
      throw FormatError(str(img_path, ": offset 8: images of ", images->dims[1], "x", images->dims[2],
                            " exceed ", kMaxSide, " pixels a side"));
    if (images->count() != labels->count())
      throw FormatError(str("image/label count mismatch: ", img_path, " holds ", images->count(), " images, ",
                            lbl_path, " holds ", labels->count(), " labels"));
    index.source_bytes += images->count() * images->item_bytes() + labels->data.size();

    const uint32_t file = static_cast<uint32_t>(index.files.size());
    index.files.push_back(basename_of(img_path));
    images_.push_back(std::async(std::launch::async, [img_path, lim]() -> std::shared_ptr<const IdxArray> {
                        return std::make_shared<IdxArray>(read_idx(img_path, 3, lim));
                      }).share());
    SplitIndex s;
    s.name = split;
    s.equal_shards = split == "train";
    s.samples.reserve(images->count());
    const uint8_t* lab = labels->item(0);
    for (uint64_t i = 0; i < images->count(); ++i) {
      if (lab[i] >= options_.num_classes) {
        std::string where = str(basename_of(lbl_path), "#", i);
        std::string why = str("label ", int{lab[i]}, " is outside 0..", options_.num_classes - 1);
        if (!scan.skip_bad)
          throw FormatError(str(lbl_path, ": offset ", labels->header_bytes + i, ": label of item ", i, ": ", why));
        s.skipped.push_back({where, why});
        continue;
      }
      SampleRef r;
      r.offset = i;
      r.length = static_cast<uint32_t>(images->item_bytes());
      r.file = file;
      r.label = lab[i];
      s.samples.push_back(r);
    }
    index.splits.push_back(std::move(s));
  }
  return index;
}

std::unique_ptr<SampleEncoder> MnistSource::make_encoder(const DatasetIndex&) const {
  return std::make_unique<MnistEncoder>(&images_, options_.png_compression_level);
}

}  // namespace fastnn::converters
