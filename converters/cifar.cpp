#include "converters/cifar.h"

#include "converters/file_io.h"
#include "converters/image_example.h"
#include "converters/mnist.h"
#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/manifest.h"

namespace fastnn::converters {
namespace {

// Non-blank lines of a names file, or empty if there is no such file.
std::vector<std::string> read_names(const std::string& path, size_t expected) {
  if (!path_exists(path)) return {};
  std::string text = read_whole_file(path, 1 << 20);
  std::vector<std::string> names = parse_labels_txt(text, path);
  if (names.size() != expected)
    throw FormatError(str(path, ": lists ", names.size(), " class names, expected ", expected));
  return names;
}

class CifarEncoder : public SampleEncoder {
 public:
  CifarEncoder(const std::vector<std::string>* paths, bool cifar100, int level)
      : files_(paths), cifar100_(cifar100), level_(level) {}
  void encode(const SampleRef& s, std::string* record, RecordInfo* info) override {
    constexpr int n = CifarSource::kSide * CifarSource::kSide;
    const int lb = cifar100_ ? 2 : 1;
    raw_.resize(lb + CifarSource::kPixelBytes);
    files_.read(s.file, s.offset, raw_.data(), raw_.size());
    const uint8_t* planes = raw_.data() + lb;
    hwc_.resize(CifarSource::kPixelBytes);
    for (int i = 0; i < n; ++i) {
      hwc_[3 * i] = planes[i];
      hwc_[3 * i + 1] = planes[n + i];
      hwc_[3 * i + 2] = planes[2 * n + i];
    }
    png_ = encode_png(hwc_.data(), CifarSource::kSide, CifarSource::kSide, 3, level_);
    serialize_image_example(png_, "png", CifarSource::kSide, CifarSource::kSide, 3, s.label,
                            cifar100_ ? static_cast<int64_t>(s.aux) : -1, record);
    *info = {"png", CifarSource::kSide, CifarSource::kSide, 3};
  }

 private:
  FileHandles files_;
  bool cifar100_;
  int level_;
  std::vector<uint8_t> raw_, hwc_;
  std::string png_;
};

}  // namespace

uint64_t cifar_record_count(uint64_t size, bool cifar100, const std::string& path) {
  const uint64_t rb = (cifar100 ? 2 : 1) + CifarSource::kPixelBytes;
  if (size % rb != 0 || size == 0)
    throw FormatError(str(path, ": size ", size, " is not a multiple of the ", rb, "-byte ", cifar100 ? "cifar100" : "cifar10",
                          " record (", size / rb, " whole records, ", size % rb, " bytes left over at offset ",
                          size - size % rb, ")"));
  return size / rb;
}

std::string cifar_record_labels(const uint8_t* r, bool cifar100, int* fine, int* coarse) {
  const int classes = cifar100 ? 100 : 10;
  *coarse = cifar100 ? r[0] : -1;
  *fine = cifar100 ? r[1] : r[0];
  if (*fine >= classes) return str("label ", *fine, " is outside 0..", classes - 1);
  if (*coarse >= 20) return str("coarse label ", *coarse, " is outside 0..19");
  return "";
}

DatasetIndex CifarSource::scan(const ScanOptions& scan) {
  const char* name = options_.cifar100 ? "cifar100" : "cifar10";
  const std::string first = options_.cifar100 ? "train.bin" : "data_batch_1.bin";
  std::string dir = options_.dir;
  for (const char* sub : {"cifar-10-batches-bin", "cifar-100-binary"})
    if (!path_exists(dir + "/" + first) && path_exists(dir + "/" + sub + "/" + first)) dir = dir + "/" + sub;

  struct SplitFiles {
    const char* split;
    std::vector<std::string> names;
  };
  std::vector<SplitFiles> layout;
  if (options_.cifar100) {
    layout = {{"train", {"train.bin"}}, {"test", {"test.bin"}}};
  } else {
    layout = {{"train", {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}},
              {"test", {"test_batch.bin"}}};
  }
  const int classes = options_.cifar100 ? 100 : 10;
  DatasetIndex index;
  index.dataset = name;
  if (!options_.class_names.empty()) {
    index.class_names = default_class_names(classes, options_.class_names);
  } else {
    const std::string names_file = dir + (options_.cifar100 ? "/fine_label_names.txt" : "/batches.meta.txt");
    index.class_names = read_names(names_file, classes);
    index.class_names_source = str("the dataset's ", names_file);
    if (index.class_names.empty()) {
      index.class_names = default_class_names(classes, {});
      index.class_names_source = str("label numbers: there is no ", names_file, " (--class-names FILE names them)");
    }
  }
  if (options_.cifar100) {
    index.coarse_class_names = read_names(dir + "/coarse_label_names.txt", 20);
    if (index.coarse_class_names.empty()) index.coarse_class_names = default_class_names(20, {});
  }

  const uint64_t rb = record_bytes();
  paths_.clear();
  for (const SplitFiles& sf : layout) {
    SplitIndex s;
    s.name = sf.split;
    s.equal_shards = s.name == "train";
    for (const std::string& fname : sf.names) {
      std::string path = dir + "/" + fname;
      if (!path_exists(path)) throw FormatError(str(options_.dir, ": no ", fname, " (the ", name, " binary version)"));
      const uint64_t size = file_size(path);
      cifar_record_count(size, options_.cifar100, path);
      const uint32_t file = static_cast<uint32_t>(index.files.size());
      index.files.push_back(fname);
      paths_.push_back(path);
      index.source_bytes += size;
      // Labels: large sequential reads of whole records.
      Fd fd(path);
      constexpr uint64_t kBatch = 1024;
      std::vector<uint8_t> buf(kBatch * rb);
      for (uint64_t rec = 0, total = size / rb; rec < total; rec += kBatch) {
        uint64_t n = std::min(kBatch, total - rec);
        read_exact(fd.get(), rec * rb, buf.data(), n * rb, path);
        for (uint64_t k = 0; k < n; ++k) {
          const uint8_t* r = buf.data() + k * rb;
          int coarse = -1, fine = 0;
          const std::string why = cifar_record_labels(r, options_.cifar100, &fine, &coarse);
          const uint64_t offset = (rec + k) * rb;
          if (!why.empty()) {
            if (!scan.skip_bad) throw FormatError(str(path, ": record ", rec + k, " at offset ", offset, ": ", why));
            s.skipped.push_back({str(fname, "#", rec + k), why});
            continue;
          }
          SampleRef ref;
          ref.offset = offset;
          ref.length = static_cast<uint32_t>(rb);
          ref.file = file;
          ref.label = fine;
          ref.aux = options_.cifar100 ? static_cast<uint32_t>(coarse) : 0;
          s.samples.push_back(ref);
        }
      }
    }
    index.splits.push_back(std::move(s));
  }
  return index;
}

std::unique_ptr<SampleEncoder> CifarSource::make_encoder(const DatasetIndex&) const {
  return std::make_unique<CifarEncoder>(&paths_, options_.cifar100, options_.png_compression_level);
}

std::string CifarSource::describe(const DatasetIndex& index, const SampleRef& s) const {
  return str(index.files[s.file], "#", s.offset / record_bytes());
}

}  // namespace fastnn::converters
