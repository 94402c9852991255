// What a backend cannot do, asked once at start-up (before any data is read or any memory is taken),
// so the loop never meets an unsupported feature half-way: a ConfigError that names the feature and
// what to use instead, or a warning for a flag that has no effect on this device or world size.
//
//   sync_batch_norm with several ranks      the CPU backend only (the NCCL statistics are not written)
//   optimizer                               every device must have the fused update (DeviceOptimizer)
//   use_fp16 / precision on the CPU         no effect (the CPU computes in f32): a warning when set
//                                           explicitly, an info line for the default
//   loss scaling, conv_search, conv_pad_channels, depthwise_conv on the CPU    no effect: a warning when set
//   input_dtype uint8 / float16 on the CPU  refused (the CPU step reads float32 batches)
//   gradient_accumulation_steps > 1         the CPU runner only, without a classifier head or mixup
//   cuda_graph with the classifier head     no effect (the head's steps run eagerly): a warning
//   allreduce_bucket_mb, collective_timeout_seconds, sync_batch_norm in a world of one process,
//   profile_at_task >= world size           no effect: a warning when set
// Config-only rules (a flag inert because of another flag's value): trainer/config/field_effects.h.
#pragma once

#include <string>

#include "schemas/job_config.pb.h"
#include "trainer/graph/graph.h"
#include "trainer/runner/device_setup.h"
#include "trainer/loop/run_setup.h"

namespace fastnn::loop {

void check_backend_supports(const JobConfig& config, const runner::ComputeTarget& target, int world_size);

// Everything asked before the step runner allocates: check_backend_supports, a warning for
// eval_every_n_steps without a held-out split, then the memory estimate (memory_estimate.h), printed
// by the chief with print_model_statistics and checked against the limit (ConfigError when over it).
void check_before_allocating(const RunSetup& setup, const JobConfig& config, const runner::ComputeTarget& target,
                             int world_size, bool chief);

// log_device_placement: one line per layer, "  <layer>  <op>  -> <device>" (fastnn runs the whole net
// on one device; the list says which).
std::string device_placement_text(const graph::Graph& graph, const runner::ComputeTarget& target);

}  // namespace fastnn::loop
