// DeviceCollectives (step_runner.h) over NCCL: the gradient average and the start-of-run broadcast of
// the GPU data-parallel path (docs/DISTRIBUTED.md).
//
//   DataParallel dp(config);                                     // the host world (MPI or one process)
//   auto coll = make_nccl_collectives(dp.comm(), config.collective_timeout_seconds());
//   runner options.collectives = coll.get();
//
// The NCCL communicator is bootstrapped over the host communicator (its unique id broadcast from rank
// 0), so every rank must call this at the same point; the caller must have selected the rank's GPU
// (the runner's target, from the local rank) first. average_async()/broadcast() issue one NCCL group
// per call (all buffers at once, on the given stream); wait() and broadcast() then wait for the stream
// under the collective timeout: a rank that died or stalled aborts the job (ncclCommAbort +
// MPI_Abort) instead of hanging it. With a world of one the same NCCL calls run (the path can be
// exercised on one GPU).
//
// Errors: ConfigError when fastnn was built without NCCL; fastnn::Error from NCCL/CUDA.
#pragma once

#include <memory>

#include "schemas/job_config.pb.h"
#include "trainer/comm/communicator.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/runner/step_runner.h"

namespace fastnn::loop {

bool nccl_built();
std::unique_ptr<runner::DeviceCollectives> make_nccl_collectives(Communicator& host, double timeout_seconds);

// The gradient collectives of a run on `target`: NCCL over dp's world when the target is a GPU and
// there are several ranks or comm_backend=nccl asks for the path in one process (the GPU selected
// first: NCCL binds its communicator to the current device); nullptr otherwise.
std::unique_ptr<runner::DeviceCollectives> make_gradient_collectives(const JobConfig& config, DataParallel& dp,
                                                             const runner::ComputeTarget& target);

}  // namespace fastnn::loop
