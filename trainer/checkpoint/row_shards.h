// Row-partitioned arrays in checkpoints: the model-parallel classifier head, whose class rows are split
// over the ranks and never gathered to one (docs/CHECKPOINTS.md, "Sharded arrays").
//
// Layout. A row-partitioned array is a row-major float32 array of global shape [rows, cols...]; rank r
// of a world of W owns rows [begin_r, end_r) (row_range: rows / W each, one more for the first rows % W
// ranks; the files accept any split that tiles [0, rows) in rank order). Every rank writes one file,
//   <dir>/ckpt-<step>.shard-<r>-of-<W>.safetensors
// holding its rows of every partitioned array: the weights *and* their optimizer slots
// ("head/weights", "head/weights/adam_m", ...), each a safetensors F32 tensor of shape
// [end_r - begin_r, cols...]. One file per rank, not two: a shard is written, checksummed, committed and
// deleted as one unit, and the optimizer flag of each array record says which is which.
//
// Commit. write_row_shard() writes the file under its temporary name (".<name>.fastnn-tmp", fsynced) and
// returns its record (name, rank, world, size, CRC32C, arrays with ranges). The chief (rank 0) passes
// every rank's record to CheckpointManager::save(..., shards), which renames the temporaries into place
// with the checkpoint's other files and lists them in the meta (CheckpointMeta.shard_files), so the meta
// stays the single commit marker: before it exists, shard files are leftovers the next save removes.
// save_sharded_checkpoint() (sharded_save.h) does the whole collective over a Communicator; the pieces
// here need none, so one process can play every rank in turn (tests, tools).
//
// Reading at any world size. RowShardReader copies any row range [b, e) of a partitioned array out of
// whichever shard files overlap it: a run saved at W ranks resumes at W' by reading
// row_range(rows, r', W') on each rank r', with no conversion step. Every file it opens is checked
// against the meta first (size, CRC32C when verifying, the tensors and their shapes), so a damaged shard
// is an error naming the file, never silently skipped.
//
// Untrusted input: the meta's shard records are validated (validate_row_shards) before any file name in
// them is used (names must be the canonical ones, so nothing outside the directory is opened) and before
// any size is used to allocate; reads allocate only after the files they copy from have been opened and
// validated against the record (so the bytes exist), and never more than RowShardReadOptions::max_read_bytes.
//
// Threading: free functions are reentrant; a RowShardReader is used by one thread at a time.
// Errors: FormatError (meta or file disagree, naming the file), IoError (file system), fastnn::Error
// (bad arguments: a range outside the array, a size mismatch).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "schemas/checkpoint_meta.pb.h"

namespace fastnn::checkpoint {

struct LoadedCheckpoint;

// Most ranks (files) a checkpoint may list; a meta listing more is refused before anything is opened.
inline constexpr int kMaxShardFiles = 1 << 16;

struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Rank `rank`'s rows of `rows` split over `world` ranks as evenly as possible: rows / world each, one
// more for the first rows % world ranks (sizes differ by at most one; ranks past `rows` get none).
RowRange row_range(int64_t rows, int rank, int world);

// This rank's rows of one row-partitioned float32 array, borrowed from the caller.
struct RowShardSlice {
  std::string name;
  std::vector<int64_t> global_shape;  // [rows, cols...]
  int64_t row_begin = 0;
  int64_t row_end = 0;
  const float* data = nullptr;  // (row_end - row_begin) * cols floats, row-major
  size_t count = 0;
  bool optimizer = false;  // an optimizer slot (resume restores it; fine-tune and eval skip it)
};

// "ckpt-<step>.shard-<rank>-of-<world>.safetensors" and its path beside a checkpoint prefix.
std::string shard_file_name(int64_t step, int rank, int world);
std::string shard_path(const std::string& prefix, int rank, int world);
// {rank, world} of a name suffix ".shard-<rank>-of-<world>.safetensors" (canonical decimals,
// rank < world <= kMaxShardFiles); nullopt for anything else.
std::optional<std::pair<int, int>> parse_shard_suffix(std::string_view suffix);

// Writes rank `rank`'s shard file of checkpoint `step` into `dir` (created if needed) under its temporary
// name, fsynced when `fsync`, and returns its record. Checks the slices (unique names, shape, row range
// inside the global rows, count) first. On failure the temporary is removed and the error rethrown.
RowShardFile write_row_shard(const std::string& dir, int64_t step, int rank, int world,
                             std::span<const RowShardSlice> arrays, bool fsync = true);
// The temporary path write_row_shard() writes and CheckpointManager::save() renames.
std::string shard_temp_path(const std::string& dir, const std::string& shard_name);

// Checks meta.shard_files without opening any file: files in rank order 0..W-1 with world size W and
// the canonical names for meta.step(); every file lists the same arrays (unique names, rank 1..16 global
// shapes, at most 2^60 elements) with the same global shape and optimizer flag; each array's ranges
// tile [0, rows) in rank order. FormatError naming `source` and the file otherwise. No-op without shards.
void validate_row_shards(const CheckpointMeta& meta, const std::string& source);

// Checks that every shard file of the checkpoint at `prefix` matches its record: exists with the
// recorded size and, when `crc`, has the recorded CRC32C and exactly the recorded tensors (F32, shape
// [row_end - row_begin, cols...]). FormatError/IoError naming the file; `meta_file` names the meta.
void verify_row_shard_files(const std::string& prefix, const CheckpointMeta& meta, const std::string& meta_file,
                            bool crc, const SafetensorsLimits& limits = {});

// One partitioned array as the meta describes it (for inspect and tools).
struct RowShardedArrayLayout {
  struct Part {
    std::string file;
    int rank = 0;
    RowRange rows;
  };
  std::string name;
  std::vector<int64_t> global_shape;
  bool optimizer = false;
  std::vector<Part> parts;  // rank order
};
// The partitioned arrays of a validated meta, by name.
std::vector<RowShardedArrayLayout> row_sharded_arrays(const CheckpointMeta& meta);

struct RowShardReadOptions {
  // Compare each file's CRC32C with the meta when it is first opened (reads it whole once).
  bool verify = true;
  // Largest single read (rows x cols x 4 bytes) a reader allocates.
  uint64_t max_read_bytes = uint64_t{64} << 30;
  SafetensorsLimits limits;
};

class RowShardReader {
 public:
  // The checkpoint at `prefix` ("<dir>/ckpt-<step>") described by `meta` (validated here).
  RowShardReader(std::string prefix, CheckpointMeta meta, RowShardReadOptions options = {});
  explicit RowShardReader(const LoadedCheckpoint& checkpoint, RowShardReadOptions options = {});
  ~RowShardReader();
  RowShardReader(RowShardReader&&) noexcept;
  RowShardReader& operator=(RowShardReader&&) noexcept;

  // Partitioned arrays, sorted by name.
  const std::vector<RowShardedArrayLayout>& arrays() const { return layouts_; }
  // nullptr when the checkpoint has no partitioned array of that name.
  const RowShardedArrayLayout* find(std::string_view name) const;
  // Error naming the array when absent.
  const RowShardedArrayLayout& at(std::string_view name) const;

  // Copies rows [begin, end) of `name` (row-major) into dst, which holds exactly `count` =
  // (end - begin) x cols floats. Opens (and verifies) only the files that overlap the range.
  void read_rows(std::string_view name, int64_t begin, int64_t end, float* dst, size_t count);
  std::vector<float> read_rows(std::string_view name, int64_t begin, int64_t end);
  // The whole array, global shape (tools: inspect, eval of a sharded head on one process).
  std::vector<float> read_all(std::string_view name);
  // Names of the files opened so far (tests: a read touches only the files it needs).
  std::vector<std::string> files_opened() const;

 private:
  const SafetensorsFile& open_file(size_t index);

  std::string prefix_;
  CheckpointMeta meta_;
  RowShardReadOptions options_;
  std::vector<RowShardedArrayLayout> layouts_;
  std::map<size_t, SafetensorsFile> open_;
};

// Every row-partitioned array of `checkpoint` whole (global shape, F32), sorted by name; optimizer
// slots only when `optimizer_state`. For one process that needs the full head (fastnn eval, predict,
// export): append their views to checkpoint.weights.arrays() and load by name as usual.
std::vector<Array> read_row_sharded_arrays(const LoadedCheckpoint& checkpoint, bool optimizer_state = false,
                                           RowShardReadOptions options = {});

}  // namespace fastnn::checkpoint
