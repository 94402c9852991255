// The collectives a sharded classifier head runs on the device (classifier_head_cuda.h), over the
// runner's NCCL communicator (DeviceCollectives::head_collectives(), nccl_collectives.h).
//
// Buffers are device memory of f32, f64 or i64 (`type`); every call is issued on `stream` (a
// cudaStream_t) and returns at once; every rank issues the same calls in the same order with the same
// counts. wait(stream) blocks until the stream has drained, under the job's collective timeout (a dead
// or stuck rank aborts the job rather than hanging it).
//   allgather           recv holds count * world_size elements, rank r's block at [r*count, (r+1)*count)
//   allreduce_sum/max   in place, elementwise; every rank gets bitwise the same result
//   reduce_scatter_sum  send holds recv_count * world_size elements; rank r receives the sum over ranks
//                       of their block r
// Errors: fastnn::Error naming the failed call; an unsupported type is an Error.
#pragma once

#include <cstddef>

#include "trainer/tensor.h"

namespace fastnn::head {

class HeadCollectives {
 public:
  virtual ~HeadCollectives() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual void allgather(const void* send, void* recv, size_t count, DType type, void* stream) = 0;
  virtual void allreduce_sum(void* data, size_t count, DType type, void* stream) = 0;
  virtual void allreduce_max(void* data, size_t count, DType type, void* stream) = 0;
  virtual void reduce_scatter_sum(const void* send, void* recv, size_t recv_count, DType type, void* stream) = 0;
  virtual void wait(void* stream) = 0;
};

}  // namespace fastnn::head
