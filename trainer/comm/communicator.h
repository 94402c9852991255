// Collective communication between the processes of a data-parallel job (one process per GPU).
//
// A Communicator is one rank's handle on a fixed world of `world_size()` processes. Every collective
// must be called by every rank, in the same order, with the same element count and type (and root);
// otherwise the job hangs, which the MPI implementation turns into an abort after
// `collective_timeout_seconds` (see collective_guard.h). All buffers are host memory, updated in
// place; `count` is in elements. Implementations:
//   LocalCommunicator  a world of one process: every collective is the identity (average included).
//   MpiCommunicator    CPU buffers over MPI_COMM_WORLD (mpi_communicator.h; only with FASTNN_HAVE_MPI).
//   NcclCommunicator   GPU buffers (nccl_communicator.h, a separate class; only with FASTNN_HAVE_NCCL):
//                      its ncclUniqueId is broadcast from rank 0 over this interface (broadcast_bytes).
//
// Determinism: a sum is an elementwise reduction over ranks; every rank receives bitwise the same
// result (MPI reduces each element once and distributes it). The order in which ranks are added may
// depend on the MPI algorithm OpenMPI picks for a message size, so sums may differ in the last bits
// between two runs that split the same data differently (different bucket sizes); with 2 ranks a+b is
// exact whatever the algorithm.
//
// allreduce_average divides the sum by world_size (for int64, C++ truncating division);
// allreduce_average_packed does it for several buffers in one message.
// allreduce_max: the elementwise maximum (exact, so bitwise the same everywhere whatever the order).
// allgather: `send` has n elements, `recv` has n * world_size, rank r's block at [r*n, (r+1)*n);
// send and recv must not overlap.
// reduce_scatter_sum: `send` has n * world_size elements; rank r receives in `recv` (n elements) the
// sum over ranks of their block [r*n, (r+1)*n) (the model-parallel head returns each rank its rows of
// the feature gradient this way). send and recv must not overlap.
//
// Threading: a Communicator is used from one thread at a time. Errors: argument mismatches (bad
// root, recv size) throw fastnn::Error; a failed MPI call throws fastnn::Error naming the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fastnn {

enum class CommDType { kFloat32, kFloat64, kInt64, kByte };
size_t comm_dtype_size(CommDType t);

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Rank among the processes on this machine (selects the GPU), and how many there are.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual std::string name() const = 0;  // "local", "mpi"

  void allreduce_sum(std::span<float> data) { allreduce_sum_impl(data.data(), data.size(), CommDType::kFloat32); }
  void allreduce_sum(std::span<double> data) { allreduce_sum_impl(data.data(), data.size(), CommDType::kFloat64); }
  void allreduce_sum(std::span<int64_t> data) { allreduce_sum_impl(data.data(), data.size(), CommDType::kInt64); }
  void allreduce_average(std::span<float> data);
  void allreduce_average(std::span<double> data);
  void allreduce_average(std::span<int64_t> data);
  // Averages several buffers in one collective (packed end to end, averaged, copied back): one message
  // instead of one per small buffer, such as the batch-norm statistics of every layer.
  void allreduce_average_packed(const std::vector<std::span<float>>& buffers);
  void allreduce_max(std::span<float> data) { allreduce_max_impl(data.data(), data.size(), CommDType::kFloat32); }
  void allreduce_max(std::span<double> data) { allreduce_max_impl(data.data(), data.size(), CommDType::kFloat64); }
  void allreduce_max(std::span<int64_t> data) { allreduce_max_impl(data.data(), data.size(), CommDType::kInt64); }

  void broadcast(std::span<float> data, int root) { broadcast_checked(data.data(), data.size(), CommDType::kFloat32, root); }
  void broadcast(std::span<double> data, int root) { broadcast_checked(data.data(), data.size(), CommDType::kFloat64, root); }
  void broadcast(std::span<int64_t> data, int root) { broadcast_checked(data.data(), data.size(), CommDType::kInt64, root); }
  void broadcast_bytes(void* data, size_t bytes, int root) { broadcast_checked(data, bytes, CommDType::kByte, root); }

  void allgather(std::span<const float> send, std::span<float> recv) { allgather_checked(send.data(), send.size(), recv.data(), recv.size(), CommDType::kFloat32); }
  void allgather(std::span<const double> send, std::span<double> recv) { allgather_checked(send.data(), send.size(), recv.data(), recv.size(), CommDType::kFloat64); }
  void allgather(std::span<const int64_t> send, std::span<int64_t> recv) { allgather_checked(send.data(), send.size(), recv.data(), recv.size(), CommDType::kInt64); }

  void allgather_bytes(const void* send, size_t bytes, void* recv, size_t recv_bytes) { allgather_checked(send, bytes, recv, recv_bytes, CommDType::kByte); }

  void reduce_scatter_sum(std::span<const float> send, std::span<float> recv) { reduce_scatter_checked(send.data(), send.size(), recv.data(), recv.size(), CommDType::kFloat32); }
  void reduce_scatter_sum(std::span<const double> send, std::span<double> recv) { reduce_scatter_checked(send.data(), send.size(), recv.data(), recv.size(), CommDType::kFloat64); }

  virtual void barrier() = 0;

  // Ends every process of the job with `code` (MPI: MPI_Abort, so the launcher kills the other ranks
  // instead of leaving them blocked in a collective). For an error one rank has and the others do not
  // know about. The default (a world of one) does nothing: the caller's exception reports the error.
  virtual void abort(int /*code*/) noexcept {}

 protected:
  // Implementations see validated arguments only.
  virtual void allreduce_sum_impl(void* data, size_t count, CommDType type) = 0;
  virtual void broadcast_impl(void* data, size_t count, CommDType type, int root) = 0;
  virtual void allgather_impl(const void* send, size_t count, void* recv, CommDType type) = 0;
  // The model-parallel collectives; a communicator that lacks them (test doubles) throws Error.
  virtual void allreduce_max_impl(void* data, size_t count, CommDType type);
  // `recv_count` elements per rank; send holds recv_count * world_size.
  virtual void reduce_scatter_impl(const void* send, void* recv, size_t recv_count, CommDType type);

 private:
  void reduce_scatter_checked(const void* send, size_t send_count, void* recv, size_t recv_count, CommDType type);
  void broadcast_checked(void* data, size_t count, CommDType type, int root);
  void allgather_checked(const void* send, size_t count, void* recv, size_t recv_count, CommDType type);
};

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string name() const override { return "local"; }
  void barrier() override {}

 protected:
  void allreduce_sum_impl(void*, size_t, CommDType) override {}
  void broadcast_impl(void*, size_t, CommDType, int) override {}
  void allgather_impl(const void* send, size_t count, void* recv, CommDType type) override;
  void allreduce_max_impl(void*, size_t, CommDType) override {}
  void reduce_scatter_impl(const void* send, void* recv, size_t recv_count, CommDType type) override;
};

struct CommOptions {
  // "auto": MPI when launched by mpirun/srun (see launched_by_mpi), else local. "local", "mpi".
  std::string backend = "auto";
  // A collective that has not completed after this long aborts the whole job (0 disables the guard).
  double collective_timeout_seconds = 300.0;
};

// True when the environment shows an MPI launcher started this process: OMPI_COMM_WORLD_SIZE
// (OpenMPI), PMI_SIZE (MPICH/Hydra, Slurm PMI) or PMIX_RANK (PMIx).
bool launched_by_mpi();

// Builds the communicator `options.backend` asks for ("nccl" picks the host world as "auto" does; the
// GPU loop adds NCCL for the gradients). Throws fastnn::ConfigError for an unknown backend,
// or when MPI is asked for (or the process was launched by mpirun) but fastnn was built without MPI.
std::unique_ptr<Communicator> make_communicator(const CommOptions& options = {});

// Every rank's string, in rank order, on every rank: the lengths are gathered first, then blocks padded
// to the longest (for small per-rank results such as predict's lines of one round).
std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine);

}  // namespace fastnn
