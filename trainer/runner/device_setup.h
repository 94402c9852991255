// Where and in what precision a run computes, from the job config (device, precision, use_fp16,
// loss_scale, dynamic_loss_scale, loss_scale_window), and the options of the step runner built from it.
//
//   device      cpu; cuda (the process's GPU: local rank modulo the device count); auto = cuda when the
//               binary has the CUDA backend and a device is present, else cpu.
//   precision   auto = fp16 when use_fp16 else fp32; fp32, fp16, bf16. On the CPU always fp32 (the CPU
//               ops compute in f32; use_fp16's FastNN default of true must not make CPU runs fail).
//   scaling     fp16: loss_scale (the initial one under dynamic_loss_scale), grown / halved per
//               loss_scale_window (optim/loss_scaler.h); at most 2^15, since the loss gradient that
//               carries the scale is itself an f16 value. fp32 and bf16: no scaling (scale 1, static).
//
// Errors: ConfigError when cuda is asked for and the binary has no CUDA backend or no device is
// present (the message says which).
#pragma once

#include <cstdint>
#include <string>

#include "schemas/job_config.pb.h"
#include "trainer/optim/loss_scaler.h"
#include "trainer/tensor.h"

namespace fastnn::runner {

struct ComputeTarget {
  Device device = Device::kCpu;
  DType dtype = DType::kF32;
  int device_index = 0;  // CUDA device ordinal
  std::string describe() const;  // "cpu f32", "cuda:0 f16"
};

bool cuda_built();    // compiled with the CUDA backend
bool cuda_present();  // cuda_built() and a device is there; never throws

// `local_rank` picks the GPU (local_rank % device count).
ComputeTarget resolve_compute_target(const JobConfig& config, int local_rank = 0);
LossScalerOptions loss_scaler_options(const JobConfig& config, DType dtype);
// Makes the target's GPU the process's device (cuda::init_backend; idempotent), e.g. before NCCL
// binds a communicator to it. A no-op for the CPU.
void select_device(const ComputeTarget& target);
// The calling thread's CUDA stream (a cudaStream_t) after select_device; nullptr on the CPU.
void* device_stream(const ComputeTarget& target);

}  // namespace fastnn::runner
