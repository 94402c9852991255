// The run directory (output_dir) belongs to one run (docs/TRAINING.md, "The run directory").
//
// RunDirectory is opened at the start of `fastnn train`, before anything is written, and decides how
// this run may use the folder:
//   - Lock (the writer, rank 0): an exclusive flock on "<dir>/.fastnn-run.lock", held until the
//     RunDirectory is destroyed; the file holds the holder's pid. A second `fastnn train` on the folder
//     gets a ConfigError at once naming the folder and that pid. Readers (`fastnn eval`) take no lock.
//   - --overwrite: removes the files fastnn writes in a run directory (run_files(): checkpoints and
//     their temporaries and set-aside copies, the index, metrics.jsonl, TensorBoard event files,
//     profiler traces, and the same in best/ (keep_best_checkpoint), ema/ (moving_average_decay) and eval/
//     (the evaluation's TensorBoard events)) and nothing else, then starts from step 0.
//   - --resume: continues from the latest good checkpoint (none: from step 0, keeping the files).
//   - neither, folder without run files: a fresh run.
//   - neither, folder holding a run: if its latest good checkpoint's saved configuration has the same
//     identity as this one (identity_differences() empty: every field but those in
//     non_identity_fields(), and the same number of ranks), the run is continued as with --resume and
//     the log says so (TF-slim behaviour); otherwise a ConfigError names the differing fields and
//     offers --resume and --overwrite. Run files without any good checkpoint: refused likewise.
//   - Damaged checkpoints (checkpoint::checkpoint_damage) newer than the one resumed are set aside
//     (checkpoint::set_aside_checkpoint, renamed "*.damaged") by the writer with a warning naming the file
//     and the reason, never skipped in silence nor overwritten by this run's saves.
//   - Resuming at step S (writer): metrics.jsonl is repaired to end at S (repair_jsonl_for_resume).
// Non-writer ranks (data-parallel, rank > 0) make the same decision read-only: no lock, nothing moved.
//
// Errors: ConfigError (locked, refused, --resume with --overwrite), IoError, FormatError.
// Threading: one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schemas/job_config.pb.h"
#include "trainer/checkpoint/checkpoint_manager.h"

namespace fastnn::loop {

inline constexpr const char* kRunLockName = ".fastnn-run.lock";

class RunDirectory {
 public:
  struct Options {
    bool resume = false;
    bool overwrite = false;
    bool writer = true;  // rank 0: locks, removes, sets aside and repairs
    int world = 1;       // ranks of this run (a different count is a different run identity)
  };

  RunDirectory(std::string dir, const JobConfig& config, Options options);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::string& dir() const { return dir_; }
  // The verified checkpoint to continue from (with optimizer state); nullptr: start at step 0.
  checkpoint::LoadedCheckpoint* resume_from() { return resume_ ? &*resume_ : nullptr; }

 private:
  void lock();
  void open(const JobConfig& config);

  std::string dir_;
  Options options_;
  int lock_fd_ = -1;
  std::optional<checkpoint::LoadedCheckpoint> resume_;
};

// Names (not paths) of the entries of `dir` that fastnn writes into a run directory, sorted, those in
// its best/, ema/ and eval/ folders as "best/<name>", "ema/<name>", "eval/<name>"; the lock file is not one of them. Empty
// if `dir` does not exist.
std::vector<std::string> run_files(const std::string& dir);
// JobConfig fields that do not change a run's identity: when to stop, logging/saving/evaluation/
// profiling cadence, output paths, the fine-tuning source, and performance knobs.
const std::set<std::string>& non_identity_fields();
// "name (saved X, now Y)" for each identity field that differs; empty: the same run.
std::vector<std::string> identity_differences(const JobConfig& saved, const JobConfig& now);

}  // namespace fastnn::loop
