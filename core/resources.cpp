#include "core/resources.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "core/check.h"

namespace fastnn {
namespace {

// From sysfs rather than sysconf(_SC_LEVEL3_CACHE_SIZE): glibc's CPUID reading says 320 MB for the
// 32 MB L3 of an AMD EPYC VM, where the kernel (and lscpu) say 32 MB.
uint64_t read_l3_cache_bytes() {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), size_file(dir + "size");
    int level = 0;
    std::string size;  // "32768K"
    if (!(level_file >> level) || level != 3 || !(size_file >> size)) continue;
    char* unit = nullptr;
    const unsigned long long n = std::strtoull(size.c_str(), &unit, 10);
    const uint64_t scale = *unit == 'K' ? 1024 : *unit == 'M' ? 1024 * 1024 : *unit == '\0' ? 1 : 0;
    return static_cast<uint64_t>(n) * scale;
  }
  return 0;
}

}  // namespace

MachineResources MachineResources::detect() {
  MachineResources m;
  m.cores = std::max(1u, std::thread::hardware_concurrency());
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) m.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  m.l3_cache_bytes = read_l3_cache_bytes();
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
