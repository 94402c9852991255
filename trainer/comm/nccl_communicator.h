// NcclCommunicator: collectives on GPU buffers over NCCL, for the CUDA training path. Compiled only
// when FASTNN_HAVE_NCCL (CUDA backend + NCCL + MPI found; trainer/CMakeLists.txt).
//
// Bootstrap: the host Communicator (MPI) carries the 128-byte ncclUniqueId: rank 0 calls
// ncclGetUniqueId, broadcast_bytes sends it to every rank, and every rank calls
// ncclCommInitRank(world_size, id, rank). The caller must have selected the rank's GPU first
// (cudaSetDevice(host.local_rank() % device_count), docs/DISTRIBUTED.md); this class does not touch
// the device choice.
//
// Collectives are enqueued on the caller's stream and return at once (NCCL semantics); buffers are
// device pointers; every rank must call them in the same order with the same counts. A rank can wait
// for the stream with wait(stream): it polls cudaStreamQuery and ncclCommGetAsyncError, and when the
// stream has not drained after `timeout_seconds` (or NCCL reports an asynchronous error) it logs which
// collective is late, calls ncclCommAbort and then host.abort(1) (MPI_Abort), so a dead or stuck rank
// ends the job instead of hanging it (the GPU counterpart of CollectiveGuard). timeout_seconds <= 0:
// wait forever.
//
// Averages use ncclAvg (NCCL >= 2.10), so every rank gets bitwise the same result. Threading: one
// thread. Errors: a failed NCCL/CUDA call throws fastnn::Error naming it.
#pragma once

#if defined(FASTNN_HAVE_NCCL)

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "trainer/comm/communicator.h"

namespace fastnn {

class NcclCommunicator {
 public:
  NcclCommunicator(Communicator& host, double timeout_seconds = 300.0);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return host_.rank(); }
  int world_size() const { return host_.world_size(); }

  void allreduce_sum(float* data, size_t count, cudaStream_t stream);
  void allreduce_average(float* data, size_t count, cudaStream_t stream);
  void broadcast(float* data, size_t count, int root, cudaStream_t stream);
  // Any NCCL element type (ncclFloat16 / ncclBfloat16 for mixed-precision state).
  void allreduce_average(void* data, size_t count, ncclDataType_t type, cudaStream_t stream);
  void broadcast(void* data, size_t count, ncclDataType_t type, int root, cudaStream_t stream);
  // Collectives issued between group_start() and group_end() are launched together (one NCCL kernel
  // for many small buffers: the per-parameter gradient allreduces of a step).
  void group_start();
  void group_end();
  // recv holds count * world_size floats, rank r's block at [r*count, (r+1)*count).
  void allgather(const float* send, float* recv, size_t count, cudaStream_t stream);
  // The same for any NCCL element type, and the sum (the model-parallel head's labels, maxima, sums).
  void allgather(const void* send, void* recv, size_t count, ncclDataType_t type, cudaStream_t stream);
  void allreduce_sum(void* data, size_t count, ncclDataType_t type, cudaStream_t stream);
  // The model-parallel head's collectives (docs/LARGE_SCALE.md): the elementwise maximum, and the sum
  // of every rank's block r delivered to rank r (send holds recv_count * world_size elements).
  void allreduce_max(void* data, size_t count, ncclDataType_t type, cudaStream_t stream);
  void reduce_scatter_sum(const void* send, void* recv, size_t recv_count, ncclDataType_t type, cudaStream_t stream);

  // Blocks until `stream` has drained, under the timeout described above.
  void wait(cudaStream_t stream);
  // ncclCommAbort, then the host communicator's abort (ends the job).
  void abort(const std::string& why) noexcept;

  ncclComm_t comm() const { return comm_; }

 private:
  Communicator& host_;
  double timeout_seconds_;
  ncclComm_t comm_ = nullptr;
  std::string last_op_ = "-";  // for the timeout message
  unsigned long long issued_ = 0;
};

}  // namespace fastnn

#endif  // FASTNN_HAVE_NCCL
