// The collective save of a checkpoint with row-partitioned arrays (row_shards.h) over a Communicator.
//
// Every rank calls save_sharded_checkpoint() at the same step (it is a collective):
//   1. each rank writes its shard file (write_row_shard: temporary name in `dir`, fsynced);
//   2. the records (or "failed") are all-gathered: lengths, then the serialized records padded to the
//      longest (two allgathers, no lock file, no polling of the file system);
//   3. rank 0 commits through its CheckpointManager::save(..., shards): the shard temporaries are
//      renamed into place with the weights and optimizer files, the meta (listing every shard) last;
//   4. rank 0 broadcasts the outcome, so every rank returns, or throws the same failure, together.
// If any rank could not write its shard, nobody commits: each rank removes its own temporary and every
// rank throws an Error naming the ranks that failed. A crash anywhere before the meta is renamed leaves
// no committed checkpoint; the next save removes the leftovers (checkpoint_manager.h).
//
// `dir` must be the same directory, shared by all ranks (a local disk on one machine, or a shared file
// system); rank 0 passes its manager (whose dir() is `dir`), the other ranks nullptr. `weights`,
// `optimizer` and `meta` are the replicated state and are used on rank 0 only; meta.world_size is set to
// the communicator's world size.
#pragma once

#include <span>
#include <string>

#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/comm/communicator.h"

namespace fastnn::checkpoint {

CheckpointInfo save_sharded_checkpoint(Communicator& comm, CheckpointManager* chief, const std::string& dir,
                                       int64_t step, std::span<const RowShardSlice> my_rows,
                                       std::span<const ArrayView> weights, std::span<const ArrayView> optimizer,
                                       CheckpointMeta meta, bool fsync = true);

}  // namespace fastnn::checkpoint
