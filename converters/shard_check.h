// `fastnn check`: verifies a converted shard set against its manifest.
//
// For every shard of the chosen splits: the file exists and has the manifest's size; every record's
// framing and both CRCs; every record parses as a tf.train.Example with the required keys and types
// (image/encoded bytes, image/format "png"/"jpeg"/"raw", image/class/label int64 in
// [0, num_classes), image/height, image/width, image/channels positive int64, plus
// image/class/coarse_label when the manifest has coarse classes); the encoded bytes' signature and
// header agree with format, height, width and channels (raw: the byte count); the shard's record
// count and label histogram equal the manifest's. Per split: the shard counts follow the split's rule
// (train: all equal; others: at most one apart); num_gpus divides the shard count and per-GPU record
// counts (GPU g reads shards g, g+N, g+2N, ...) are equal for train. Each shard's label histogram is
// tested against the split's (chi-square goodness of fit); a p-value below alpha / shards
// (Bonferroni) is an error: the split is not shuffled. With `decode`, every image is fully decoded.
//
// A manifest that is missing or invalid throws (nothing can be checked); everything else is collected
// in the report. Shards are checked in parallel (oneTBB); the report does not depend on the threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/stats.h"
#include "core/manifest.h"

namespace fastnn::convert {

struct CheckOptions {
  std::string dir;
  std::string split;     // "" = all splits
  int64_t num_gpus = 0;  // 0 = the manifest's
  bool decode = false;
  double alpha = 1e-6;   // family-wise significance of the balance test, per split
  int threads = 0;
  bool quiet = false;
  size_t max_errors_listed = 5;  // per shard
};

struct ShardReport {
  std::string file;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> histogram;
  ChiSquare balance;
  uint64_t error_count = 0;
  std::vector<std::string> errors;  // the first max_errors_listed
};

struct SplitReport {
  std::string name;
  std::vector<ShardReport> shards;
  std::vector<uint64_t> histogram;
  std::vector<uint64_t> per_gpu;  // records per GPU
  double min_p_value = 1;
  double p_threshold = 0;         // alpha / shards
  std::vector<std::string> errors;
};

struct CheckReport {
  Manifest manifest;
  int64_t num_gpus = 0;
  bool decoded = false;
  std::vector<SplitReport> splits;
  std::vector<std::string> errors;    // not tied to one shard
  std::vector<std::string> warnings;
  uint64_t records = 0, bytes = 0;
  double seconds = 0;
  uint64_t error_count() const;
  bool ok() const { return error_count() == 0; }
};

CheckReport check_shard_set(const CheckOptions& options);

}  // namespace fastnn::convert
