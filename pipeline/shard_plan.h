// Which records a rank reads: the file list of a split and how it is divided over ranks.
//
// FastNN's rule, kept: files sorted, rank r takes the files whose index % world == r — when the file
// count divides by world and every rank then holds the same number of records (fastnn's converters
// make train shards equal). Otherwise the split is divided by record: every rank reads every file
// and keeps the records at positions p of the (deterministic) interleaved stream with
// p % world == rank and p < world × ⌊N / world⌋. Either way every rank gets exactly the same number
// of records per epoch, hence the same number of batches, and it is known before the first step
// (from the manifest, or by counting the files once when built from a plain file list). The at most
// world − 1 records no rank gets are reported as `dropped_per_epoch`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tfrecord.h"

namespace fastnn::pipeline {

struct SampleSource;  // pipeline/batch.h

struct ShardFile {
  std::string path;
  int64_t records = -1;  // -1: not known yet
  std::vector<uint64_t> label_histogram;  // records per class, from a manifest; empty when unknown
};

struct FileList {
  std::vector<ShardFile> files;
  // Compression of every file (from a manifest); unset: detected per file when it is opened.
  bool compression_known = false;
  Compression compression = Compression::kNone;
  std::string name;  // for messages: "DIR (split train)" or "3 files"
  int64_t num_classes = 0;  // the manifest's class count; 0 when unknown (plain files)
  uint64_t total_bytes = 0; // the manifest's shard sizes added up; 0 when unknown

  bool counts_known() const;
  uint64_t total_records() const;  // requires counts_known()
};

// Where a record came from, for messages: "PATH: record N at offset B", or "cache record N at offset
// B" for one served from a cache file.
std::string describe_source(const FileList& list, const SampleSource& s);

// From <dir>/manifest.json: the split's shards in manifest order, their record counts, the
// compression. Throws ConfigError naming the splits present when `split` is not one of them.
FileList file_list_from_manifest(const std::string& dir, const std::string& split);
// Plain paths, sorted by the caller's order (FastNN sorts; we keep what is given). `counts` may be
// empty (unknown) or one per file.
FileList file_list_from_paths(std::vector<std::string> paths, std::vector<int64_t> counts = {});
// Fills unknown counts by reading the files once (length CRCs only).
void count_records(FileList* list, bool verify_data_crc = false);

enum class ShardMode { kAll, kByFile, kByRecord };
const char* shard_mode_name(ShardMode m);

struct ShardPlan {
  int rank = 0;
  int world = 1;
  ShardMode mode = ShardMode::kAll;
  std::vector<uint32_t> files;     // indices into FileList::files this rank opens, in order
  uint64_t total_records = 0;      // in the split
  uint64_t records_per_rank = 0;   // per epoch, equal on every rank
  uint64_t dropped_per_epoch = 0;  // records no rank reads (by-record sharding only)
};

// Requires counts_known(). Throws ConfigError for a bad rank/world.
ShardPlan plan_shards(const FileList& list, int rank, int world);

}  // namespace fastnn::pipeline
