// Pre-flight check before a data-parallel run: refuse, on every rank with the same clear message, a
// configuration that would hang at the end of an epoch.
//
// check_world_consistency allgathers each rank's (batches per epoch, train shard count) and throws
// fastnn::ConfigError when
//   - any rank's batches per epoch differs from another's (the rank with fewer batches would leave the
//     others blocked in the last allreduce), listing every rank's value; or
//   - the shard counts differ between ranks (they read different manifests); or
//   - the shard count does not divide by the world size (the pipeline gives each rank shards/world
//     whole shards), or is zero.
// It is a collective: every rank must call it. Every rank sees the same gathered values, so either all
// ranks throw the same error or none does.
#pragma once

#include <cstdint>

#include "trainer/comm/communicator.h"

namespace fastnn {

void check_world_consistency(Communicator& comm, int64_t per_rank_batches_per_epoch, int64_t shard_count);

}  // namespace fastnn
