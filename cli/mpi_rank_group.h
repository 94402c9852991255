// The ranks of `mpirun fastnn convert` / `mpirun fastnn check` over the trainer's MPI communicator
// (converters/rank_group.h says what they do with it; the converters themselves link no MPI).
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/error_report.h"
#include "converters/rank_group.h"
#include "trainer/comm/communicator.h"

namespace fastnn::cli {

class MpiRankGroup final : public converters::RankGroup {
 public:
  explicit MpiRankGroup(std::unique_ptr<Communicator> comm) : comm_(std::move(comm)) {}
  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->world_size(); }
  int local_size() const override { return comm_->local_size(); }
  std::vector<std::string> allgather(const std::string& mine) override { return allgather_strings(*comm_, mine); }
  void barrier() { comm_->barrier(); }
  [[noreturn]] void abort(int code) override {
    comm_->abort(code);
    std::_Exit(code);
  }

 private:
  std::unique_ptr<Communicator> comm_;
};

// OpenMPI's default start probes its cm pml's network libraries (PSM, PSM2): 0.2 s of a 10-record
// `mpirun -np 2` conversion here (0.42 against 0.21 s), 8% of a one-machine Fashion-MNIST one. When
// every rank of the job runs on this machine and the user chose no pml, choose ob1 (shared memory);
// and, unless chosen, shared memory without its single-copy mode, which fails in containers that
// forbid ptrace and which a conversion's small messages do not need. Call before MPI starts; other
// MPIs ignore the variables.
inline void prefer_shared_memory_on_one_machine() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!size || !local || std::string(size) != local || std::getenv("OMPI_MCA_pml")) return;
  setenv("OMPI_MCA_pml", "ob1", 0);
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
}

// The job's ranks when mpirun (or srun) started this process, else null. A rank waits for the others
// at most `collective_timeout` seconds at the end of a step (0: as long as it takes).
inline std::unique_ptr<MpiRankGroup> mpi_rank_group(double collective_timeout) {
  if (!launched_by_mpi()) return nullptr;
  prefer_shared_memory_on_one_machine();
  return std::make_unique<MpiRankGroup>(
      make_communicator(CommOptions{.backend = "mpi", .collective_timeout_seconds = collective_timeout}));
}

// Called from a catch block of a command that may run under mpirun. A failure of this rank alone is
// rethrown for main() to report. A failure every rank reached (an exchange between them failed): rank 0
// says what failed, then all ranks exit together (exit_with_the_other_ranks says why they wait).
[[noreturn]] inline void end_with_the_group(MpiRankGroup* group) {
  if (!group || !group->failed()) throw;
  exit_with_the_other_ranks(group->rank() == 0 ? std::current_exception() : nullptr, [&] { group->barrier(); });
}

inline constexpr const char* kCollectiveTimeoutHelp =
    "Under mpirun: seconds a rank waits for the others at the end of a step before the job is aborted (0: as "
    "long as the slowest needs; a rank that dies ends the job at once either way)";

}  // namespace fastnn::cli
