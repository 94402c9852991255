// What every source format gives the shared converter: an index of its samples, and an encoder that
// turns one indexed sample into a tf.train.Example.
//
// The index never holds sample bytes: a SampleRef is where the sample lives (file, offset, length)
// and its label, 24 bytes. Sources scan their inputs once (validating what can be validated without
// decoding everything: headers, labels, base64, image completeness), so that the shard plan is made
// from good samples only and --skip-bad cannot unbalance shards later. Encoders then read what they
// need in any order, from any thread (one encoder per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/manifest.h"

namespace fastnn::converters {

struct SampleRef {
  uint64_t offset = 0;  // byte offset in files[file] (MNIST: the image index; synthetic: the sample id)
  uint32_t length = 0;  // bytes at offset (0 where the source knows the size itself)
  uint32_t file = 0;    // index into DatasetIndex::files
  int32_t label = 0;    // 0-based class
  uint32_t aux = 0;     // format-specific: CIFAR-100 coarse label; base64-TSV 1-based line number
};
static_assert(sizeof(SampleRef) == 24);

struct SplitIndex {
  std::string name;
  bool equal_shards = false;  // train
  std::vector<SampleRef> samples;
  std::vector<SkippedSample> skipped;
  uint64_t ignored_files = 0;
  std::vector<SkippedSample> ignored;  // image-folder: every file passed over, with why (ignored_files of them)
};

struct DatasetIndex {
  std::string dataset;                   // converter name for the manifest
  std::vector<std::string> class_names;
  std::vector<std::string> coarse_class_names;
  std::string class_names_source;        // where the names came from, in words (Manifest::class_names_source)
  std::vector<std::string> files;        // what SampleRef::file indexes; how samples are described
  std::vector<SplitIndex> splits;
  uint64_t source_bytes = 0;             // bytes scanned (for the summary)
};

// What encode() tells the writer about the record it produced (for the manifest's image spec).
struct RecordInfo {
  const char* format = "";  // "png", "jpeg", "raw"
  int height = 0;
  int width = 0;
  int channels = 0;
};

class SampleEncoder {
 public:
  virtual ~SampleEncoder() = default;
  // Replaces *record with the serialized Example of `s`. Throws Error naming the sample's source.
  virtual void encode(const SampleRef& s, std::string* record, RecordInfo* info) = 0;
};

class RankGroup;

struct ScanOptions {
  bool skip_bad = false;  // false: the first bad sample is an error
  bool quiet = false;     // no progress lines
  // Under mpirun (rank_group.h): a scan whose per-file pass is costly spreads it over the ranks
  // (share_items), and every rank still returns the whole index. Null: this process alone.
  RankGroup* group = nullptr;
};

class Source {
 public:
  virtual ~Source() = default;
  // Runs inside the converter's task arena (may use oneTBB). Throws Error for bad inputs.
  virtual DatasetIndex scan(const ScanOptions& options) = 0;
  // One per writing thread; `index` is what scan() returned and outlives the encoder.
  virtual std::unique_ptr<SampleEncoder> make_encoder(const DatasetIndex& index) const = 0;
  // Where a sample came from, for dropped/padded lists and messages: "file#7", "file:12", a path.
  virtual std::string describe(const DatasetIndex& index, const SampleRef& s) const;
};

// Shared by sources: "<files[s.file]>#<offset>".
std::string describe_record(const DatasetIndex& index, const SampleRef& s);

}  // namespace fastnn::converters
