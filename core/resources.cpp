#include "core/resources.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "core/check.h"

namespace fastnn {

MachineResources MachineResources::detect() {
  MachineResources m;
  m.cores = std::max(1u, std::thread::hardware_concurrency());
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) m.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  return m;
}

int64_t max_worker_threads(const MachineResources& m) { return std::max<int64_t>(64, int64_t{8} * m.cores); }

void check_thread_count(int64_t threads, std::string_view flag, const MachineResources& m) {
  if (threads < 0) throw ConfigError(str(flag, " ", threads, " must be >= 0 (0: all cores)"));
  const int64_t max = max_worker_threads(m);
  if (threads > max)
    throw ConfigError(str(flag, " ", threads, " is more than the ", max, " threads allowed on this machine (", m.cores,
                          " cores: at most max(64, 8 × cores))"));
}

}  // namespace fastnn
