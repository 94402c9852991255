#if defined(FASTNN_HAVE_NCCL)

#include "trainer/comm/nccl_communicator.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/check.h"
#include "core/logging.h"

namespace fastnn {
namespace {

static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId is sent as raw bytes");

const char* type_name(ncclDataType_t t) {
  switch (t) {
    case ncclFloat32: return "float32";
    case ncclFloat16: return "float16";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat64: return "float64";
    case ncclInt64: return "int64";
    default: return "other";
  }
}

}  // namespace

NcclCommunicator::NcclCommunicator(Communicator& host, double timeout_seconds)
    : host_(host), timeout_seconds_(timeout_seconds) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (host_.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  host_.broadcast_bytes(&id, sizeof id, 0);
  NCCL_CHECK(ncclCommInitRank(&comm_, host_.world_size(), id, host_.rank()));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
}

void NcclCommunicator::allreduce_sum(float* data, size_t count, cudaStream_t stream) {
  allreduce_sum(data, count, ncclFloat32, stream);
}

void NcclCommunicator::allreduce_sum(void* data, size_t count, ncclDataType_t type, cudaStream_t stream) {
  last_op_ = str("allreduce_sum #", ++issued_, " (", count, " x ", type_name(type), ")");
  NCCL_CHECK(ncclAllReduce(data, data, count, type, ncclSum, comm_, stream));
}

void NcclCommunicator::allreduce_average(float* data, size_t count, cudaStream_t stream) {
  allreduce_average(data, count, ncclFloat32, stream);
}

void NcclCommunicator::allreduce_average(void* data, size_t count, ncclDataType_t type, cudaStream_t stream) {
  last_op_ = str("allreduce_average #", ++issued_, " (", count, " x ", type_name(type), ")");
  NCCL_CHECK(ncclAllReduce(data, data, count, type, ncclAvg, comm_, stream));
}

void NcclCommunicator::broadcast(float* data, size_t count, int root, cudaStream_t stream) {
  broadcast(data, count, ncclFloat32, root, stream);
}

void NcclCommunicator::broadcast(void* data, size_t count, ncclDataType_t type, int root, cudaStream_t stream) {
  FASTNN_CHECK(root >= 0 && root < world_size(), "broadcast root ", root, " outside world of ", world_size());
  last_op_ = str("broadcast #", ++issued_, " (", count, " x ", type_name(type), ")");
  NCCL_CHECK(ncclBroadcast(data, data, count, type, root, comm_, stream));
}

void NcclCommunicator::group_start() { NCCL_CHECK(ncclGroupStart()); }
void NcclCommunicator::group_end() { NCCL_CHECK(ncclGroupEnd()); }

void NcclCommunicator::allgather(const float* send, float* recv, size_t count, cudaStream_t stream) {
  allgather(send, recv, count, ncclFloat32, stream);
}

void NcclCommunicator::allgather(const void* send, void* recv, size_t count, ncclDataType_t type, cudaStream_t stream) {
  last_op_ = str("allgather #", ++issued_, " (", count, " x ", type_name(type), ")");
  NCCL_CHECK(ncclAllGather(send, recv, count, type, comm_, stream));
}

void NcclCommunicator::allreduce_max(void* data, size_t count, ncclDataType_t type, cudaStream_t stream) {
  last_op_ = str("allreduce_max #", ++issued_, " (", count, " x ", type_name(type), ")");
  NCCL_CHECK(ncclAllReduce(data, data, count, type, ncclMax, comm_, stream));
}

void NcclCommunicator::reduce_scatter_sum(const void* send, void* recv, size_t recv_count, ncclDataType_t type,
                                          cudaStream_t stream) {
  last_op_ = str("reduce_scatter #", ++issued_, " (", recv_count, " x ", type_name(type), " per rank)");
  NCCL_CHECK(ncclReduceScatter(send, recv, recv_count, type, ncclSum, comm_, stream));
}

void NcclCommunicator::wait(cudaStream_t stream) {
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      abort(str("NCCL reported an asynchronous error: ", ncclGetErrorString(async)));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_seconds_ > 0 && waited > timeout_seconds_)
      abort(str("collective ", last_op_, " has not completed after ", waited, " s (collective_timeout_seconds=",
                timeout_seconds_, "); another rank has probably died, stalled, or run a different number of steps"));
    // Spin briefly (short collectives), then yield the core to the other threads.
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void NcclCommunicator::abort(const std::string& why) noexcept {
  log_error("rank ", host_.rank(), "/", host_.world_size(), ": ", why, ". Aborting the job.");
  if (comm_ != nullptr) ncclCommAbort(comm_);
  comm_ = nullptr;
  host_.abort(1);
  std::_Exit(1);  // a world of one: host.abort returns
}

}  // namespace fastnn

#endif  // FASTNN_HAVE_NCCL
