#if defined(FASTNN_HAVE_MPI)

#include "trainer/comm/mpi_communicator.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/check.h"

namespace fastnn {
namespace {

void mpi_check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(str("MPI call ", call, " failed: ", std::string(text, static_cast<size_t>(len))));
}
#define FASTNN_MPI(call) mpi_check((call), #call)

MPI_Datatype mpi_type(CommDType t) {
  switch (t) {
    case CommDType::kFloat32: return MPI_FLOAT;
    case CommDType::kFloat64: return MPI_DOUBLE;
    case CommDType::kInt64: return MPI_INT64_T;
    case CommDType::kByte: return MPI_BYTE;
  }
  return MPI_BYTE;
}

const char* type_name(CommDType t) {
  switch (t) {
    case CommDType::kFloat32: return "float32";
    case CommDType::kFloat64: return "float64";
    case CommDType::kInt64: return "int64";
    case CommDType::kByte: return "byte";
  }
  return "?";
}

// MPI counts are int; larger buffers go in pieces of this many elements.
constexpr size_t kMaxPiece = size_t{1} << 30;

}  // namespace

MpiCommunicator::MpiCommunicator(double collective_timeout_seconds) {
  int initialised = 0;
  FASTNN_MPI(MPI_Initialized(&initialised));
  if (!initialised) {
    FASTNN_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_));
    owns_init_ = true;
  } else {
    FASTNN_MPI(MPI_Query_thread(&thread_level_));
  }
  FASTNN_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  FASTNN_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  FASTNN_MPI(MPI_Comm_rank(comm_, &rank_));
  FASTNN_MPI(MPI_Comm_size(comm_, &size_));
  MPI_Comm local = MPI_COMM_NULL;
  FASTNN_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  FASTNN_MPI(MPI_Comm_rank(local, &local_rank_));
  FASTNN_MPI(MPI_Comm_size(local, &local_size_));
  MPI_Comm_free(&local);
  guard_ = std::make_unique<CollectiveGuard>(
      collective_timeout_seconds, str("rank ", rank_, "/", size_),
      [](const std::string&) { MPI_Abort(MPI_COMM_WORLD, 1); });
}

MpiCommunicator::~MpiCommunicator() {
  guard_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (owns_init_) MPI_Finalize();
}

void MpiCommunicator::barrier() {
  CollectiveGuard::Scope scope(*guard_, "barrier", 0, "-");
  FASTNN_MPI(MPI_Barrier(comm_));
}

void MpiCommunicator::abort(int code) noexcept {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void MpiCommunicator::allreduce_sum_impl(void* data, size_t count, CommDType type) {
  allreduce(data, count, type, MPI_SUM, "allreduce_sum");
}

void MpiCommunicator::allreduce_max_impl(void* data, size_t count, CommDType type) {
  allreduce(data, count, type, MPI_MAX, "allreduce_max");
}

void MpiCommunicator::allreduce(void* data, size_t count, CommDType type, MPI_Op op, const char* what) {
  FASTNN_CHECK(type != CommDType::kByte, what, " on bytes is not defined");
  if (count == 0) return;
  CollectiveGuard::Scope scope(*guard_, what, count, type_name(type));
  auto* p = static_cast<unsigned char*>(data);
  const size_t esize = comm_dtype_size(type);
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(kMaxPiece, count - done);
    FASTNN_MPI(MPI_Allreduce(MPI_IN_PLACE, p + done * esize, static_cast<int>(n), mpi_type(type), op, comm_));
    done += n;
  }
}

void MpiCommunicator::reduce_scatter_impl(const void* send, void* recv, size_t recv_count, CommDType type) {
  FASTNN_CHECK(type != CommDType::kByte, "reduce_scatter on bytes is not defined");
  CollectiveGuard::Scope scope(*guard_, "reduce_scatter", recv_count, type_name(type));
  // One block per rank must fit MPI's int count (2^30 elements: 4 GiB of f32 per rank's block).
  FASTNN_CHECK(recv_count <= kMaxPiece, "reduce_scatter of ", recv_count, " elements per rank is larger than supported");
  FASTNN_MPI(MPI_Reduce_scatter_block(send, recv, static_cast<int>(recv_count), mpi_type(type), MPI_SUM, comm_));
}

void MpiCommunicator::broadcast_impl(void* data, size_t count, CommDType type, int root) {
  CollectiveGuard::Scope scope(*guard_, "broadcast", count, type_name(type));
  auto* p = static_cast<unsigned char*>(data);
  const size_t esize = comm_dtype_size(type);
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(kMaxPiece, count - done);
    FASTNN_MPI(MPI_Bcast(p + done * esize, static_cast<int>(n), mpi_type(type), root, comm_));
    done += n;
  }
}

void MpiCommunicator::allgather_impl(const void* send, size_t count, void* recv, CommDType type) {
  CollectiveGuard::Scope scope(*guard_, "allgather", count, type_name(type));
  // Gathers are small (per-rank counters, metrics); one block must fit MPI's int count.
  FASTNN_CHECK(count <= kMaxPiece, "allgather of ", count, " elements per rank is larger than supported");
  FASTNN_MPI(MPI_Allgather(send, static_cast<int>(count), mpi_type(type), recv, static_cast<int>(count),
                           mpi_type(type), comm_));
}

}  // namespace fastnn

#endif  // FASTNN_HAVE_MPI
