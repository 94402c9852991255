#include "trainer/comm/world_check.h"

#include <sstream>
#include <vector>

#include "core/check.h"

namespace fastnn {

void check_world_consistency(Communicator& comm, int64_t per_rank_batches_per_epoch, int64_t shard_count) {
  const int world = comm.world_size();
  const int64_t mine[2] = {per_rank_batches_per_epoch, shard_count};
  std::vector<int64_t> all(2 * static_cast<size_t>(world));
  comm.allgather(std::span<const int64_t>(mine, 2), std::span<int64_t>(all));

  auto list = [&](int field, const char* unit) {
    std::ostringstream os;
    for (int r = 0; r < world; ++r) os << (r ? ", " : "") << "rank " << r << ": " << all[2 * r + field] << unit;
    return os.str();
  };
  bool batches_differ = false, shards_differ = false;
  for (int r = 1; r < world; ++r) {
    batches_differ |= all[2 * r] != all[0];
    shards_differ |= all[2 * r + 1] != all[1];
  }
  if (batches_differ)
    throw ConfigError(str("per-rank epoch lengths differ (", list(0, " batches"),
                          "); every rank must run the same number of steps per epoch or the ranks with more "
                          "would wait forever in the last allreduce. Use shards with equal record counts "
                          "(convert with padding or drop_remainder) and the same batch size on every rank"));
  if (shards_differ)
    throw ConfigError(str("ranks see different train shard counts (", list(1, " shards"),
                          "); every rank must read the same dataset"));
  if (all[1] <= 0 || all[1] % world != 0)
    throw ConfigError(str("the ", all[1], " train shards do not divide over ", world,
                          " ranks; convert with a shard count that is a multiple of the world size "
                          "(num_gpus x shards_per_gpu), or launch a number of ranks that divides it"));
  if (all[0] <= 0)
    throw ConfigError(str("each rank has ", all[0], " batches per epoch; the per-rank data is smaller than one batch"));
}

}  // namespace fastnn
