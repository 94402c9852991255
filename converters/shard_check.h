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
// Without a manifest (a folder of TF-slim / FastNN shards and perhaps labels.txt, or `dir` given as
// comma-separated glob patterns of shard files; core/dataset_files.h): the shards are the folder's
// files named *.tfrecord* or *-NNNNN-of-NNNNN*, grouped into splits by the train/validation/test
// token of their names; records are read with converters/foreign_record.h's key spellings. Checked:
// framing and both CRCs; the image and label keys and their types; labels non-negative and, with
// labels.txt, below its class count; a declared format (jpg, png, raw...) against the bytes; the
// record's height and width (where present) against the image header; every image decoded
// with `decode`; a "-NNNNN-of-MMMMM" name set complete (no shard index missing); per-split counts
// (unequal train shards are a warning); the balance test as above. What cannot be checked without a
// manifest (expected record counts, file sizes and histograms, the intended GPU spread, the class
// count without labels.txt) is listed in CheckReport::not_checked.
//
// Classes (converters/class_balance.h): every split's records per class, its missing classes and the
// ratio of its largest class to its smallest, in SplitReport::classes, and a warning for a ratio above
// max_class_ratio or a missing class — with or without a manifest, whenever the class count is known.
//
// With `survey.enabled` (`--report`), the same pass also gathers image sizes, per-channel pixel
// statistics and sample thumbnails per class (converters/image_survey.h), into ShardReport::survey,
// CheckReport::survey (merged in shard order) and CheckReport::samples.
//
// Under mpirun (options.group): the shards are dealt to the ranks round robin and every rank ends with
// the whole report (rank 0 prints it); a shard set with a manifest only, without the survey.
//
// A manifest that is invalid throws (nothing can be checked); so does a folder with neither a manifest
// nor shard files. Everything else is collected in the report. Shards are checked in parallel
// (oneTBB); the report does not depend on the threads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "converters/class_balance.h"
#include "converters/image_survey.h"
#include "converters/stats.h"
#include "core/manifest.h"

namespace fastnn::converters {

class RankGroup;

struct CheckOptions {
  std::string dir;
  std::string split;     // "" = all splits
  int64_t num_gpus = 0;  // 0 = the manifest's
  bool decode = false;
  double alpha = 1e-6;   // family-wise significance of the balance test, per split
  double max_class_ratio = kDefaultMaxClassRatio;  // warn when a split's largest class outnumbers its smallest more
  int threads = 0;
  bool quiet = false;
  size_t max_errors_listed = 5;  // per shard
  SurveyOptions survey;           // --report
  RankGroup* group = nullptr;     // the ranks of an mpirun check (rank_group.h); null: this process
};

struct ShardReport {
  std::string file;
  uint64_t records = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> histogram;          // by class (empty when the class count is unknown)
  std::map<int64_t, uint64_t> label_counts;  // no class count known (no manifest, no labels.txt)
  ChiSquare balance;
  uint64_t error_count = 0;
  std::vector<std::string> errors;  // the first max_errors_listed
  ImageSurvey survey;               // survey.enabled
};

struct SplitReport {
  std::string name;
  std::vector<ShardReport> shards;
  std::vector<uint64_t> histogram;
  std::vector<uint64_t> per_gpu;  // records per GPU
  double min_p_value = 1;
  double p_threshold = 0;         // alpha / shards
  std::vector<std::string> errors;
  ClassBalance classes;           // the split's records per class (empty when the class count is unknown)
};

struct CheckReport {
  Manifest manifest;  // without manifest.json: what could be learned (classes, shard names; dataset "")
  bool has_manifest = true;
  std::string labels_file;               // no manifest: the labels.txt used ("" = none)
  std::vector<std::string> not_checked;  // no manifest: what could not be checked, and why
  int64_t num_gpus = 0;
  bool decoded = false;
  std::vector<SplitReport> splits;
  std::vector<std::string> errors;    // not tied to one shard
  std::vector<std::string> warnings;
  uint64_t records = 0, bytes = 0;
  double seconds = 0;
  // survey.enabled: the shards' surveys merged in (split, shard) order; the sample thumbnails by label;
  // how many records of each shard were decoded for the channel statistics (UINT64_MAX: all).
  bool surveyed = false;
  ImageSurvey survey;
  std::map<int64_t, std::vector<SampleImage>> samples;
  uint64_t measured_per_shard = 0;
  uint64_t error_count() const;
  bool ok() const { return error_count() == 0; }
};

CheckReport check_shard_set(const CheckOptions& options);

}  // namespace fastnn::converters
