// MpiCommunicator: the Communicator over MPI (CPU buffers), compiled only when FASTNN_HAVE_MPI.
//
// Construction calls MPI_Init_thread(MPI_THREAD_MULTIPLE requested) unless MPI is already initialised,
// and then the destructor calls MPI_Finalize (only if this object initialised MPI). At most one
// MpiCommunicator should live at a time. Collectives run on a duplicate of MPI_COMM_WORLD so they
// never match messages of other code using MPI_COMM_WORLD. local_rank()/local_size() come from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), i.e. the ranks on the same machine.
//
// Every blocking call runs under a CollectiveGuard (collective_guard.h) whose timeout action is
// MPI_Abort(MPI_COMM_WORLD, 1). MPI errors are returned, not fatal (MPI_ERRORS_RETURN on our
// communicator), and thrown as fastnn::Error naming the call. Buffers larger than INT_MAX elements are
// sent in pieces.
#pragma once

#if defined(FASTNN_HAVE_MPI)

#include <mpi.h>

#include <memory>

#include "trainer/comm/collective_guard.h"
#include "trainer/comm/communicator.h"

namespace fastnn {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(double collective_timeout_seconds = 300.0);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::string name() const override { return "mpi"; }
  void barrier() override;
  void abort(int code) noexcept override;  // MPI_Abort(MPI_COMM_WORLD, code), then _Exit if it returns

  // The MPI thread level granted (MPI_THREAD_MULTIPLE is needed for the watchdog to call MPI_Abort
  // while the main thread is inside a collective; OpenMPI aborts correctly with lower levels too).
  int thread_level() const { return thread_level_; }
  MPI_Comm comm() const { return comm_; }

 protected:
  void allreduce_sum_impl(void* data, size_t count, CommDType type) override;
  void broadcast_impl(void* data, size_t count, CommDType type, int root) override;
  void allgather_impl(const void* send, size_t count, void* recv, CommDType type) override;
  void allreduce_max_impl(void* data, size_t count, CommDType type) override;
  void reduce_scatter_impl(const void* send, void* recv, size_t recv_count, CommDType type) override;

 private:
  bool owns_init_ = false;
  int thread_level_ = 0;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<CollectiveGuard> guard_;

  void allreduce(void* data, size_t count, CommDType type, MPI_Op op, const char* what);
};

}  // namespace fastnn

#endif  // FASTNN_HAVE_MPI
