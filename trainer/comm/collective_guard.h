// "Never hang": a watchdog for blocking collectives.
//
// A collective blocks until every rank has joined it. When a rank dies, is stuck, or has run a
// different number of steps, the others would wait forever. The communicator wraps every blocking call
// in a CollectiveGuard::Scope; a watchdog thread checks once per `poll` interval whether the collective
// in flight has been running longer than `timeout_seconds`, and if so logs (to stderr, as an error)
//   "rank 0/2: collective allreduce_sum #17 (4096 x float32) has not completed after 5.0 s ..."
// and calls `on_timeout` with that message. For MPI, on_timeout is MPI_Abort(MPI_COMM_WORLD, 1), which
// makes mpirun kill every rank and exit non-zero. If on_timeout returns (it should not for MPI), the
// guard calls std::_Exit(1) unless `exit_if_on_timeout_returns` is false (tests).
//
// The guard fires at most once. timeout_seconds <= 0 disables it (no thread is started).
// Threading: begin/end (Scope) from the one thread that runs collectives; the watchdog is internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace fastnn {

class CollectiveGuard {
 public:
  using OnTimeout = std::function<void(const std::string& message)>;

  CollectiveGuard(double timeout_seconds, std::string rank_label, OnTimeout on_timeout,
                  bool exit_if_on_timeout_returns = true);
  ~CollectiveGuard();
  CollectiveGuard(const CollectiveGuard&) = delete;
  CollectiveGuard& operator=(const CollectiveGuard&) = delete;

  bool enabled() const { return timeout_ > std::chrono::nanoseconds::zero(); }
  bool fired() const;

  class Scope {
   public:
    Scope(CollectiveGuard& guard, const char* op, size_t count, const char* type);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CollectiveGuard& guard_;
  };

 private:
  void begin(const char* op, size_t count, const char* type);
  void end();
  void watch();

  std::chrono::nanoseconds timeout_;
  std::string rank_label_;
  OnTimeout on_timeout_;
  bool exit_if_returns_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool in_flight_ = false;
  bool fired_ = false;
  uint64_t seq_ = 0;
  std::string op_;
  size_t count_ = 0;
  std::string type_;
  std::chrono::steady_clock::time_point started_;
  std::thread thread_;
};

}  // namespace fastnn
