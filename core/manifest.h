// The manifest of a shard set: <out>/manifest.json and <out>/labels.txt (docs/FORMATS.md lists every
// field). Converters write it last, as the commit marker of a conversion; the pipeline and
// `fastnn check` read it to know the shard files, their record counts and the classes, instead of
// asking the user for num_sample_per_epoch.
//
// Reading treats the file as untrusted: every count is bounded, histograms must have num_classes
// entries and add up, shard names must be the canonical <split>-%05d-of-%05d.tfrecord (no paths),
// and the shard count must be num_gpus × shards_per_gpu. Problems throw FormatError naming the file
// and the field ("manifest.json: splits.train.shards[3].records: ...").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn {

inline constexpr const char* kManifestFileName = "manifest.json";
inline constexpr const char* kLabelsFileName = "labels.txt";
inline constexpr const char* kManifestFormat = "fastnn-shards";
inline constexpr int kManifestVersion = 1;
// Bounds applied when reading (and checked when writing).
inline constexpr int64_t kMaxClasses = int64_t{1} << 24;
inline constexpr int64_t kMaxShards = 1 << 20;
inline constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 30;  // manifest.json, checked before reading
inline constexpr uint64_t kMaxLabelsBytes = uint64_t{256} << 20;  // labels.txt / --class-names files
// Ignored input files are all counted but only this many named per split (a tree of images beside
// millions of annotation files must not make a manifest of hundreds of megabytes).
inline constexpr size_t kMaxIgnoredListed = 1000;

// A source sample that is not in the shards (train split, --remainder drop).
struct DroppedSample {
  std::string source;  // where it came from: "train-images-idx3-ubyte.gz#123", "data.tsv:17", a path
  int64_t label = 0;
};
// A source sample written a second time to fill a train shard (--remainder pad).
struct PaddedSample {
  std::string source;
  int64_t label = 0;
  int64_t shard = 0;  // index of the shard that holds the copy
};
// A bad source sample left out by --skip-bad.
struct SkippedSample {
  std::string source;
  std::string reason;
};

struct ShardInfo {
  std::string file;                        // name inside the output directory
  uint64_t records = 0;
  uint64_t bytes = 0;                      // size of the file on disk (compressed size if compressed)
  std::vector<uint64_t> label_histogram;   // num_classes entries
};

struct SplitInfo {
  std::string name;                        // "train", "test", "validation", ...
  uint64_t num_records = 0;                // sum of the shards' records
  uint64_t num_source_samples = 0;         // good source samples indexed for this split
  bool equal_shards = false;               // train rule: every shard holds exactly the same count
  std::vector<ShardInfo> shards;           // num_gpus × shards_per_gpu entries, in file order
  std::vector<uint64_t> label_histogram;   // over all records of the split (pads included)
  std::vector<DroppedSample> dropped;
  std::vector<PaddedSample> padded;
  std::vector<SkippedSample> skipped;
  uint64_t ignored_files = 0;              // hidden and non-image files an image-folder scan passed over
  std::vector<SkippedSample> ignored;      // the first kMaxIgnoredListed of them: path and why
};

// What the records' images look like: a value is "" / 0 when it varies between records.
struct ImageSpec {
  std::string format;  // "png", "jpeg", "raw", or "" (mixed)
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
};

struct Manifest {
  std::string format = kManifestFormat;
  int64_t version = kManifestVersion;
  std::string dataset;                     // the converter: "mnist", "cifar10", "image-folder", ...
  std::string created_by;                  // "fastnn 0.1.0"
  std::vector<std::string> inputs;         // as given on the command line
  std::vector<std::string> class_names;    // index = label; size = num_classes
  std::vector<std::string> coarse_class_names;  // CIFAR-100's image/class/coarse_label; else empty
  // Where the class names came from, in words ("Fashion-MNIST's names: the input path says
  // fashion-mnist", "--labels-from data/train"); "" when not said.
  std::string class_names_source;
  uint64_t seed = 0;
  int64_t num_gpus = 1;
  int64_t shards_per_gpu = 1;
  std::string compression = "none";        // "none", "gzip", "zlib" (tf.data compression_type)
  std::string remainder = "drop";          // "drop" or "pad": how train shards were equalised
  bool stratified = false;
  ImageSpec image;
  std::vector<SplitInfo> splits;

  int64_t num_classes() const { return static_cast<int64_t>(class_names.size()); }
  int64_t num_shards() const { return num_gpus * shards_per_gpu; }
  // nullptr when there is no such split.
  const SplitInfo* find_split(std::string_view name) const;
};

// "<split>-%05d-of-%05d.tfrecord"
std::string shard_file_name(std::string_view split, int64_t index, int64_t count);
// True for a name of that pattern (any split name of [A-Za-z0-9_.-] not starting with '.').
bool is_shard_file_name(std::string_view name);
// Split names become file name prefixes: non-empty, [A-Za-z0-9_-] only. Throws ConfigError otherwise.
void validate_split_name(std::string_view name);

// JSON text (pretty, 2-space indent, trailing newline). Throws Error if the manifest is inconsistent
// (the same checks reading applies), so a bad manifest is never written.
std::string serialize_manifest(const Manifest& m);
// `name` is used in error messages.
Manifest parse_manifest(std::string_view json_text, const std::string& name = kManifestFileName);
// `path` is the file or the directory holding manifest.json. Throws IoError / FormatError.
Manifest read_manifest(const std::string& path);

// Names are bytes: every class name, input path, sample source and skip reason is written in
// core/name_escape.h's escaped form (\xHH for control characters, '\' and bytes that are not UTF-8)
// and unescaped when read, so any byte sequence round-trips and labels.txt stays one line per class.
// labels.txt: one "id:name" line per class, ids 0..n-1 in order.
std::string format_labels_txt(const std::vector<std::string>& class_names);
// Accepts "id:name" lines in any order (ids must be exactly 0..n-1, each once) or, when no line has
// an "id:" prefix, plain names one per line. Blank lines are ignored. Throws FormatError with the line,
// or naming the file when it holds no name at all.
std::vector<std::string> parse_labels_txt(std::string_view text, const std::string& name);

}  // namespace fastnn
