// The one conversion driver every format shares: scan → (hold out) → plan → write shards → manifest.
//
//   MnistSource src(options);
//   ConvertResult r = run_conversion(src, convert_options);
//
// Output (docs/FORMATS.md): <output>/<split>-%05d-of-%05d.tfrecord for every split, labels.txt,
// manifest.json, written through OutputDir (temporary names, manifest last). Same inputs and options →
// byte-identical files for any `threads`, and for any number of ranks under mpirun (rank_group.h).
// Errors: ConfigError (bad options, a split too small), FormatError (bad input), IoError; nothing
// final-named is left behind on any of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/planner.h"
#include "converters/source.h"
#include "core/manifest.h"
#include "core/tfrecord.h"

namespace fastnn::converters {

class RankGroup;

struct ConvertOptions {
  std::vector<std::string> inputs;  // recorded in the manifest
  std::string output;
  int64_t num_gpus = 1;
  int64_t shards_per_gpu = 4;
  uint64_t seed = 0;
  Remainder remainder = Remainder::kDrop;
  bool stratify = false;
  Compression compression = Compression::kNone;
  int threads = 0;  // 0: all cores
  bool skip_bad = false;
  bool overwrite = false;
  bool quiet = false;  // no progress lines
  bool sync = true;    // fsync before the commit (OutputDir::Options::sync)
  // Hold a "validation" split out of "train" (image-folder): a fraction in (0, 1) or a count; at most
  // one of them is set (fraction 0 and count 0: no hold-out). The hold-out is stratified by class
  // (each class gives its share, planner.h choose_holdout) unless random_holdout.
  double validation_fraction = 0;
  uint64_t validation_count = 0;
  bool random_holdout = false;
  // Where class names given on the command line came from ("--class-names FILE"); replaces what the
  // source says of its own names in the manifest's class_names_source.
  std::string class_names_source;
  // Appended to the warning that the output has no held-out split (how this format makes one).
  std::string holdout_hint;
  std::string created_by = "fastnn";
  // The ranks of an mpirun conversion (rank_group.h); null or a group of one: this process alone.
  RankGroup* group = nullptr;
};

struct ConvertResult {
  Manifest manifest;
  std::string output;
  uint64_t source_bytes = 0;
  uint64_t bytes_written = 0;  // all shard files
  double scan_seconds = 0, write_seconds = 0, total_seconds = 0;
  std::vector<std::string> cleaned_up;  // leftovers of an earlier interrupted run that were removed
  std::vector<SkippedSample> ignored;   // every input file passed over, all splits (the manifest names the first ones)
  // What the output lacks that a user should know before training: a split without a sample of some
  // class, no held-out split at all.
  std::vector<std::string> warnings;
  // Under mpirun: this process's rank and the number of ranks. Every rank returns the same manifest;
  // rank 0 reports it.
  int rank = 0, ranks = 1;
  uint64_t records_written_here = 0;  // by this rank
};

ConvertResult run_conversion(Source& source, const ConvertOptions& options);

// Checks the options every format shares (counts positive, at most one hold-out form...).
void validate_convert_options(const ConvertOptions& options);

}  // namespace fastnn::converters
