// Checkpoints in a directory (docs/CHECKPOINTS.md):
//
//   <dir>/ckpt-<step>.weights.safetensors     model arrays (safetensors.h)
//   <dir>/ckpt-<step>.optimizer.safetensors   optimizer state arrays (optimizer_state.h)
//   <dir>/ckpt-<step>.shard-<r>-of-<W>.safetensors  rank r's rows of row-partitioned arrays (row_shards.h)
//   <dir>/ckpt-<step>.meta.pbtxt              CheckpointMeta (schemas/checkpoint_meta.proto), text format
//   <dir>/checkpoint                          CheckpointIndex: the latest prefix and every kept one
//
// Atomicity: save() writes each file under a temporary name in the same directory (".<name>.fastnn-tmp"),
// fsyncs it, and renames the two safetensors files (and the shard files every rank wrote under their
// temporary names, see row_shards.h), then the meta, into place, fsyncing the directory;
// then it rewrites the index the same way, and only then deletes checkpoints beyond keep_max (meta first,
// so a half-deleted one is simply incomplete). The meta is the commit marker: it records the size and
// CRC32C of both data files and of every shard file, so a checkpoint is *complete* when its meta parses
// and all of them exist with the recorded sizes (shard files are part of the checkpoint in everything
// below: completeness, verification, damage, set-aside, retention and leftover removal). list() and latest() see only complete checkpoints; temporaries and data
// files without a meta (a crash mid-save) are ignored, and the next save() removes them. If the index is
// missing or names an incomplete checkpoint, latest() falls back to the highest complete step.
//
// Damage: a checkpoint whose meta exists is *committed*; one that is committed but does not load and
// verify (meta unparsable, a data file missing, resized or with another CRC32C) is *damaged*. It is never
// passed over in silence by the readers that choose "the latest": load_checkpoint(<dir>) takes the
// latest committed one and fails naming it, the reason and the last good checkpoint; the run directory
// (trainer/loop/run_directory.h) sets a damaged one aside (set_aside_checkpoint) with a warning before a
// resumed run could overwrite it. CheckpointManager::latest() keeps its complete-only view for callers
// that only need a step.
//
// Retention: after a save, the keep_max highest steps are kept (0 keeps all) and the one just saved
// is never deleted, even when higher steps exist (a run resumed from an earlier checkpoint).
//
// Writers: one process saves into a directory at a time (the chief, rank 0). The first save() takes an
// exclusive flock on "<dir>/.checkpoint.lock", held until the manager is destroyed; a second writer
// gets a ConfigError. Reading (list, latest, load) needs no lock. Not thread-safe: one thread uses a
// manager.
//
// Errors: IoError (file system), FormatError (a corrupt or mismatching checkpoint file, naming the file),
// ConfigError (no checkpoint where one is required, a second writer).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schemas/checkpoint_meta.pb.h"
#include "core/named_array.h"
#include "core/safetensors.h"

namespace fastnn::checkpoint {

// Meta files and the index are small; anything larger is refused before reading.
inline constexpr size_t kMaxCheckpointMetaBytes = size_t{16} << 20;

struct CheckpointInfo {
  int64_t step = 0;
  std::string prefix;  // "<dir>/ckpt-<step>"
};

struct LoadedCheckpoint {
  std::string prefix;
  CheckpointMeta meta;
  SafetensorsFile weights;
  std::optional<SafetensorsFile> optimizer;  // absent when not asked for
};

struct CheckpointLoadOptions {
  bool optimizer = true;
  // Compare each data file's size, CRC32C and array count with the meta (reads the whole file once).
  bool verify = true;
  // With verify: also read every shard file (row_shards.h) whole to compare its CRC32C and tensors with
  // the meta. Without it, shard files are checked for existence and size only; a multi-rank resume may
  // turn it off and let RowShardReader verify just the files each rank reads.
  bool verify_shards = true;
  SafetensorsLimits limits;
};

// File names of a checkpoint prefix ("<dir>/ckpt-<step>").
std::string checkpoint_prefix(const std::string& dir, int64_t step);
std::string weights_path(const std::string& prefix);
std::string optimizer_path(const std::string& prefix);
std::string meta_path(const std::string& prefix);
// Step of a file name "ckpt-<step>" + optional ".weights.safetensors" / ".optimizer.safetensors" /
// ".meta.pbtxt" / ".shard-<r>-of-<W>.safetensors" (no directory); nullopt for any other name.
std::optional<int64_t> parse_checkpoint_name(const std::string& name, std::string* suffix = nullptr);

// Text format <-> CheckpointMeta / CheckpointIndex; `source` names the text in FormatErrors (with line).
std::string checkpoint_meta_to_text(const CheckpointMeta& meta);
CheckpointMeta parse_checkpoint_meta(const std::string& text, const std::string& source);
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Loads "<dir>/ckpt-<step>" given as the prefix, any of its files, or a directory (its latest
// committed checkpoint). ConfigError if a directory holds no committed checkpoint; FormatError naming
// the checkpoint, the reason and the last good one if a directory's latest is damaged.
LoadedCheckpoint load_checkpoint(const std::string& path_or_prefix, const CheckpointLoadOptions& options = {});

// Committed checkpoints of `dir` (a meta file exists), latest first: the one the index names when it
// is committed, then the others by descending step. Empty if `dir` does not exist.
std::vector<CheckpointInfo> list_committed_latest_first(const std::string& dir);
// The names of `dir`'s entries (none when it does not exist); IoError naming it when it cannot be read.
std::vector<std::string> list_entry_names(const std::string& dir);
// Every file of the checkpoint `prefix` ("<dir>/ckpt-<step>": weights, optimizer, meta, shards) that
// exists, as paths: what a command reading it must not overwrite.
std::vector<std::string> checkpoint_file_paths(const std::string& prefix);
// Why `prefix` does not load with full verification (the error's message), or "" when it does.
std::string checkpoint_damage(const std::string& prefix, bool optimizer = true);
// Renames the files of a damaged checkpoint out of the way ("<file>.damaged", then ".damaged-2", ...),
// so that no reader takes it and no save replaces it; returns the new paths. IoError on failure.
std::vector<std::string> set_aside_checkpoint(const std::string& prefix);

class CheckpointManager {
 public:
  struct Options {
    int keep_max = 5;  // checkpoints kept after a save; 0 keeps all (JobConfig.keep_checkpoint_max)
    bool fsync = true;  // off only in tests that do not care about power loss
    // Recorded in the meta when the caller leaves meta.fastnn_version empty ("fastnn 0.1.0").
    std::string fastnn_version;
    // Testing: called after each stage of save() with its name ("weights", "optimizer", "meta_temp",
    // "renamed_data", "meta", "index", "retention"); a test makes it throw or _exit to simulate a crash.
    std::function<void(const std::string& stage)> fault_hook;
  };

  explicit CheckpointManager(std::string dir);
  CheckpointManager(std::string dir, Options options);
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  const std::string& dir() const { return dir_; }

  // Writes checkpoint `step` (replacing one with the same step) and returns its info. `meta` supplies
  // everything the caller knows (epoch, samples, LR, loss scale, rng, config, model name...); save()
  // sets step, the file records, and wall_time/timestamp (when unset) and fastnn_version (when empty).
  // Creates the directory if needed. If it throws, no temporary is left and the previous latest
  // checkpoint is still the latest.
  CheckpointInfo save(int64_t step, std::span<const ArrayView> weights, std::span<const ArrayView> optimizer,
                      CheckpointMeta meta);
  // The same, committing row-partitioned arrays too: `shards` are the records write_row_shard() returned
  // on every rank of the world (rank order, all for `step`), whose files wait under their temporary names
  // in dir(). They are checked (validate_row_shards, each temporary present with its recorded size),
  // renamed into place with the weights and optimizer files, and recorded in meta.shard_files; shard
  // files of an earlier checkpoint of the same step that the new one does not list are removed.
  CheckpointInfo save(int64_t step, std::span<const ArrayView> weights, std::span<const ArrayView> optimizer,
                      CheckpointMeta meta, std::span<const RowShardFile> shards);

  // Complete checkpoints, ascending step.
  std::vector<CheckpointInfo> list() const;
  std::optional<CheckpointInfo> latest() const;
  // The latest complete checkpoint; ConfigError naming the directory if there is none.
  LoadedCheckpoint load_latest(const CheckpointLoadOptions& options = {}) const;
  // A prefix or file as load_checkpoint() takes; a bare "ckpt-<step>" is taken inside dir().
  LoadedCheckpoint load(const std::string& path_or_prefix, const CheckpointLoadOptions& options = {}) const;

 private:
  void acquire_lock(const std::vector<std::string>& spare);
  void remove_leftovers(const std::vector<std::string>& spare);
  void write_index(const CheckpointInfo& latest, const std::vector<CheckpointInfo>& kept);
  void stage(const std::string& name);

  std::string dir_;
  Options options_;
  int lock_fd_ = -1;
};

}  // namespace fastnn::checkpoint
