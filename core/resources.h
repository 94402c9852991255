// The machine's cores and memory, and the bounds on resource flags derived from them, so that a
// flag like --threads 200000 is refused at once with the numbers instead of taking minutes and
// gigabytes before failing. Bounds are generous (oversubscription is allowed); they only stop
// values no machine of this size could use. Errors are ConfigError naming the flag.
#pragma once

#include <cstdint>
#include <string_view>

namespace fastnn {

struct MachineResources {
  unsigned cores = 1;          // std::thread::hardware_concurrency (at least 1)
  uint64_t memory_bytes = 0;   // physical memory (sysconf); 0 if unknown
  uint64_t l3_cache_bytes = 0; // the L3 cache cpu0 shares (Linux's sysfs); 0 if unknown
  static MachineResources detect();
};

// Worker threads allowed: max(64, 8 × cores).
int64_t max_worker_threads(const MachineResources& m = MachineResources::detect());
// Throws ConfigError "FLAG N is more than the M threads allowed on this machine (C cores: at most
// max(64, 8 × cores))" for threads > max_worker_threads(); threads < 0 is an error too (0 = auto).
void check_thread_count(int64_t threads, std::string_view flag, const MachineResources& m = MachineResources::detect());

}  // namespace fastnn
