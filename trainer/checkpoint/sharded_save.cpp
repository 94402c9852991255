// save_sharded_checkpoint (sharded_save.h): shard files written by every rank, committed by rank 0.
#include "trainer/checkpoint/sharded_save.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"

namespace fastnn::checkpoint {

CheckpointInfo save_sharded_checkpoint(Communicator& comm, CheckpointManager* chief, const std::string& dir,
                                       int64_t step, std::span<const RowShardSlice> my_rows,
                                       std::span<const ArrayView> weights, std::span<const ArrayView> optimizer,
                                       CheckpointMeta meta, bool fsync) {
  const int rank = comm.rank(), world = comm.world_size();
  const CheckpointInfo info{step, checkpoint_prefix(dir, step)};

  // 1. This rank's shard. Any failure (a bad argument included) is reported to the others through the
  // collectives below instead of leaving them waiting in one.
  std::string record, my_error;
  try {
    FASTNN_CHECK(rank != 0 || (chief != nullptr && chief->dir() == dir), "rank 0 needs the CheckpointManager of ", dir);
    record = write_row_shard(dir, step, rank, world, my_rows, fsync).SerializeAsString();
  } catch (const std::exception& e) {
    my_error = e.what();
  }

  // 2. Lengths (-1: failed), then the records padded to the longest, as int64 words.
  const int64_t mine = my_error.empty() ? static_cast<int64_t>(record.size()) : -1;
  std::vector<int64_t> lengths(static_cast<size_t>(world));
  comm.allgather(std::span<const int64_t>(&mine, 1), std::span<int64_t>(lengths));
  std::string failed;
  for (int r = 0; r < world; ++r)
    if (lengths[static_cast<size_t>(r)] < 0) failed += str(failed.empty() ? "" : ", ", r);
  if (!failed.empty()) {
    if (my_error.empty()) ::unlink(shard_temp_path(dir, shard_file_name(step, rank, world)).c_str());
    throw Error(str("checkpoint ", info.prefix, " not saved: rank(s) ", failed, " could not write a shard file",
                    my_error.empty() ? std::string() : str(" (rank ", rank, ": ", my_error, ")")));
  }
  const size_t words = (static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end())) + 7) / 8;
  std::vector<int64_t> send(words, 0), all(words * static_cast<size_t>(world));
  std::memcpy(send.data(), record.data(), record.size());
  comm.allgather(std::span<const int64_t>(send), std::span<int64_t>(all));

  // 3. Rank 0 commits; 4. everyone learns the outcome (0 = committed, else the length of the error).
  std::string error;
  std::exception_ptr chief_error;
  if (rank == 0) {
    try {
      std::vector<RowShardFile> shards(static_cast<size_t>(world));
      for (int r = 0; r < world; ++r) {
        const char* bytes = reinterpret_cast<const char*>(all.data() + static_cast<size_t>(r) * words);
        FASTNN_CHECK(shards[static_cast<size_t>(r)].ParseFromArray(bytes, static_cast<int>(lengths[static_cast<size_t>(r)])),
                     "checkpoint ", info.prefix, ": rank ", r, "'s shard record does not parse");
      }
      meta.set_world_size(world);
      chief->save(step, weights, optimizer, std::move(meta), shards);
    } catch (const std::exception& e) {
      error = e.what();
      chief_error = std::current_exception();
    }
  }
  int64_t outcome = static_cast<int64_t>(error.size());
  comm.broadcast(std::span<int64_t>(&outcome, 1), 0);
  if (outcome != 0) {
    error.resize(static_cast<size_t>(outcome));
    comm.broadcast_bytes(error.data(), error.size(), 0);
    if (chief_error) std::rethrow_exception(chief_error);
    throw Error(str("checkpoint ", info.prefix, " not saved: rank 0 could not commit it: ", error));
  }
  return info;
}

}  // namespace fastnn::checkpoint
