// `fastnn bench allreduce`: the gradient allreduce's speed across the job's ranks, message size by
// message size (docs/DISTRIBUTED.md, docs/PERFORMANCE.md).
//
//   device=cpu   host float buffers averaged by the host communicator (MPI under mpirun, else a world
//                of one, where an average is the identity and the numbers show the call overhead);
//   device=cuda  device float buffers averaged by NCCL (nccl_collectives.h), one process per GPU.
//
// For each size: `warmup` untimed calls, then `iters` timed ones; the median call time, the algorithm
// bandwidth (bytes / time) and the bus bandwidth (algbw x 2(n-1)/n: what each link carries in a ring
// allreduce, comparable across world sizes; NCCL's nccl-tests report the same two). Every rank runs
// the same sizes in the same order; rank 0's times are reported (each call ends with the collective,
// so the ranks' times agree within a call's skew). Beside each size on the CPU, the ceiling measured
// in the same run: a memcpy of the same bytes (an allreduce over shared memory cannot beat a copy of
// its buffer). With `model`, also one whole gradient average of the config's model_name: its
// parameter count in allreduce_bucket_mb buckets, as a training step issues it (BucketedAllreduce on
// the CPU; NCCL on the GPU, one call per bucket).
// Errors: ConfigError from the device / communicator set-up; Error from a collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schemas/job_config.pb.h"
#include "trainer/runner/device_setup.h"

namespace fastnn::bench {

struct AllreduceBenchOptions {
  std::vector<int64_t> bytes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
  int iters = 20;
  int warmup = 5;
  bool model = false;  // also time the gradient average of the config's model_name
};

struct AllreduceBenchRow {
  int64_t bytes = 0;
  double median_ms = 0, min_ms = 0;
  double algbw_gbps = 0, busbw_gbps = 0;  // GB/s (1e9 bytes)
  double copy_gbps = 0;                   // the CPU ceiling: memcpy of the same bytes (0 on a GPU)
};

struct ModelAverageRow {
  std::string model;
  int64_t parameters = 0;
  size_t buckets = 0;
  double median_ms = 0, min_ms = 0;
};

struct AllreduceBenchResult {
  runner::ComputeTarget target;
  std::string backend;  // "mpi", "local", "nccl"
  int rank = 0, world_size = 1;
  std::vector<AllreduceBenchRow> rows;
  std::optional<ModelAverageRow> model;
};

AllreduceBenchResult run_allreduce_bench(const JobConfig& config, const AllreduceBenchOptions& options);
nlohmann::json allreduce_bench_json(const AllreduceBenchResult& r);

}  // namespace fastnn::bench
