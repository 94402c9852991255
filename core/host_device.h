// FASTNN_HD marks a function for both the host and the device: __host__ __device__ under nvcc, nothing
// under the host compiler. For code written once for the CPU and the CUDA kernels (the Philox generator,
// the optimizer rules).
#pragma once

#if defined(__CUDACC__)
#define FASTNN_HD __host__ __device__
#else
#define FASTNN_HD
#endif

// FASTNN_HD_PICK(device, host): the device expression in nvcc's device pass, the host one elsewhere.
#if defined(__CUDA_ARCH__)
#define FASTNN_HD_PICK(device, host) (device)
#else
#define FASTNN_HD_PICK(device, host) (host)
#endif
