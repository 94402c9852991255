#include "trainer/comm/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

#if defined(FASTNN_HAVE_MPI)
#include "trainer/comm/mpi_communicator.h"
#endif

namespace fastnn {

size_t comm_dtype_size(CommDType t) {
  switch (t) {
    case CommDType::kFloat32: return 4;
    case CommDType::kFloat64: return 8;
    case CommDType::kInt64: return 8;
    case CommDType::kByte: return 1;
  }
  return 1;
}

void Communicator::allreduce_average(std::span<float> data) {
  allreduce_sum(data);
  const int w = world_size();
  if (w == 1) return;
  // Divide rather than multiply by 1/w: x/2 is exact, x*(1/3) and x/3 may differ, and dividing matches
  // what a single process computing mean(...) does.
  for (float& v : data) v /= static_cast<float>(w);
}

void Communicator::allreduce_average(std::span<double> data) {
  allreduce_sum(data);
  const int w = world_size();
  if (w == 1) return;
  for (double& v : data) v /= static_cast<double>(w);
}

void Communicator::allreduce_average(std::span<int64_t> data) {
  allreduce_sum(data);
  const int w = world_size();
  if (w == 1) return;
  for (int64_t& v : data) v /= w;
}

void Communicator::allreduce_average_packed(const std::vector<std::span<float>>& buffers) {
  if (world_size() == 1) return;
  std::vector<float> packed;
  for (std::span<float> b : buffers) packed.insert(packed.end(), b.begin(), b.end());
  if (packed.empty()) return;
  allreduce_average(std::span<float>(packed));
  size_t at = 0;
  for (std::span<float> b : buffers) {
    std::copy_n(packed.data() + at, b.size(), b.data());
    at += b.size();
  }
}

void Communicator::broadcast_checked(void* data, size_t count, CommDType type, int root) {
  FASTNN_CHECK(root >= 0 && root < world_size(), "broadcast root ", root, " outside world of ", world_size());
  if (count == 0 || world_size() == 1) return;
  broadcast_impl(data, count, type, root);
}

void Communicator::allgather_checked(const void* send, size_t count, void* recv, size_t recv_count,
                                     CommDType type) {
  FASTNN_CHECK(recv_count == count * static_cast<size_t>(world_size()), "allgather: recv holds ", recv_count,
               " elements, need ", count, " x ", world_size(), " ranks");
  if (count == 0) return;
  allgather_impl(send, count, recv, type);
}

void Communicator::reduce_scatter_checked(const void* send, size_t send_count, void* recv, size_t recv_count,
                                          CommDType type) {
  FASTNN_CHECK(send_count == recv_count * static_cast<size_t>(world_size()), "reduce_scatter: send holds ",
               send_count, " elements, need ", recv_count, " x ", world_size(), " ranks");
  if (recv_count == 0) return;
  reduce_scatter_impl(send, recv, recv_count, type);
}

void Communicator::allreduce_max_impl(void*, size_t, CommDType) {
  throw Error(str("the ", name(), " communicator has no allreduce_max"));
}

void Communicator::reduce_scatter_impl(const void*, void*, size_t, CommDType) {
  throw Error(str("the ", name(), " communicator has no reduce_scatter"));
}

void LocalCommunicator::reduce_scatter_impl(const void* send, void* recv, size_t recv_count, CommDType type) {
  if (send != recv) std::memmove(recv, send, recv_count * comm_dtype_size(type));
}

void LocalCommunicator::allgather_impl(const void* send, size_t count, void* recv, CommDType type) {
  if (send != recv) std::memmove(recv, send, count * comm_dtype_size(type));
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

std::unique_ptr<Communicator> make_communicator(const CommOptions& options) {
  std::string backend = options.backend;
  if (backend.empty() || backend == "auto" || backend == "nccl") backend = launched_by_mpi() ? "mpi" : "local";
  if (backend == "local") return std::make_unique<LocalCommunicator>();
  if (backend == "mpi") {
#if defined(FASTNN_HAVE_MPI)
    return std::make_unique<MpiCommunicator>(options.collective_timeout_seconds);
#else
    throw ConfigError(
        "this process was launched by an MPI launcher (or --comm_backend=mpi was given) but fastnn was "
        "built without MPI; install an MPI (e.g. libopenmpi-dev) and rebuild, or run without mpirun");
#endif
  }
  throw ConfigError(str("unknown communicator backend '", options.backend, "' (expected auto, local, mpi or nccl)"));
}

std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine) {
  const size_t world = static_cast<size_t>(comm.world_size());
  const int64_t length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths(world);
  comm.allgather(std::span<const int64_t>(&length, 1), lengths);
  const size_t block = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<std::string> out(world);
  if (block == 0) return out;
  std::string send = mine;
  send.resize(block);
  std::string recv(block * world, '\0');
  comm.allgather_bytes(send.data(), block, recv.data(), recv.size());
  for (size_t r = 0; r < world; ++r) out[r] = recv.substr(r * block, static_cast<size_t>(lengths[r]));
  return out;
}

}  // namespace fastnn
