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
//
// One configuration per job (docs/DISTRIBUTED.md): check_job_config_consistency compares every rank's
// job configuration, minus the rank-local fields (rank_local_config_fields(): paths, which machines may
// mount at different points, and per-machine pipeline performance knobs), first by a 64-bit hash of
// its canonical text (one small allgather), and only on a mismatch gathers the texts and names each
// differing field with every rank's value. check_model_consistency does the same for the model's
// variables ("name [shape]" per variable) before the start broadcast, so ranks with different models
// get a message naming the first differing variable instead of a raw MPI_ERR_TRUNCATE.
// Both are collectives with agreed results: every rank throws the same ConfigError or none does.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "trainer/comm/communicator.h"

namespace fastnn {

void check_world_consistency(Communicator& comm, int64_t per_rank_batches_per_epoch, int64_t shard_count);

// JobConfig fields that may differ between the ranks of one job.
const std::set<std::string>& rank_local_config_fields();
void check_job_config_consistency(Communicator& comm, const google::protobuf::Message& config);
// `variables`: one "name [d0,d1,...]" line per model variable, in the graph's order.
void check_model_consistency(Communicator& comm, const std::vector<std::string>& variables);
// FNV-1a 64 of `text` (the hash the checks exchange).
uint64_t text_digest(const std::string& text);

}  // namespace fastnn
