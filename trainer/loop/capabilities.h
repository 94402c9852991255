// What a backend cannot do, asked once at start-up (before any data is read or any memory is taken),
// so the loop never meets an unsupported feature half-way: a ConfigError that names the feature and
// what to use instead, or an info line for a flag that has no effect on this device.
//
//   sync_batch_norm with several ranks      the CPU backend only (the NCCL statistics are not written)
//   optimizer                               every device must have the fused update (DeviceOptimizer)
//   use_fp16 / precision on the CPU         no effect (the CPU computes in f32): an info line
//   input_dtype uint8 / float16 on the CPU  refused (the CPU step reads float32 batches)
//   the classifier head (loss_type, emb_dim) the CPU backend only (its GPU kernels are not written)
#pragma once

#include "schemas/job_config.pb.h"
#include "trainer/loop/device_setup.h"

namespace fastnn::loop {

void check_backend_supports(const JobConfig& config, const ComputeTarget& target, int world_size);

}  // namespace fastnn::loop
