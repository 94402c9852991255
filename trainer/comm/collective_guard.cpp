#include "trainer/comm/collective_guard.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "core/logging.h"

namespace fastnn {

CollectiveGuard::CollectiveGuard(double timeout_seconds, std::string rank_label, OnTimeout on_timeout,
                                 bool exit_if_on_timeout_returns)
    : timeout_(timeout_seconds > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::duration<double>(timeout_seconds))
                                   : std::chrono::nanoseconds::zero()),
      rank_label_(std::move(rank_label)),
      on_timeout_(std::move(on_timeout)),
      exit_if_returns_(exit_if_on_timeout_returns) {
  if (enabled()) thread_ = std::thread([this] { watch(); });
}

CollectiveGuard::~CollectiveGuard() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool CollectiveGuard::fired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fired_;
}

void CollectiveGuard::begin(const char* op, size_t count, const char* type) {
  if (!enabled()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ = true;
    ++seq_;
    op_ = op;
    count_ = count;
    type_ = type;
    started_ = std::chrono::steady_clock::now();
  }
  cv_.notify_all();
}

void CollectiveGuard::end() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ = false;
}

void CollectiveGuard::watch() {
  // Poll often enough that the overshoot is small against the timeout, but never busier than 10 Hz.
  const auto poll = std::clamp<std::chrono::nanoseconds>(timeout_ / 10, std::chrono::milliseconds(100),
                                                         std::chrono::seconds(5));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, poll);
    if (stop_ || fired_ || !in_flight_) continue;
    const auto waited = std::chrono::steady_clock::now() - started_;
    if (waited < timeout_) continue;
    fired_ = true;
    const std::string message =
        str(rank_label_, ": collective ", op_, " #", seq_, " (", count_, " x ", type_, ") has not completed after ",
            std::chrono::duration<double>(waited).count(), " s (collective_timeout_seconds=",
            std::chrono::duration<double>(timeout_).count(),
            "); another rank has probably died, stalled, or run a different number of steps. Aborting the job.");
    lock.unlock();
    log_error(message);
    std::fflush(stderr);
    if (on_timeout_) on_timeout_(message);
    if (exit_if_returns_) std::_Exit(1);
    lock.lock();
  }
}

CollectiveGuard::Scope::Scope(CollectiveGuard& guard, const char* op, size_t count, const char* type)
    : guard_(guard) {
  guard_.begin(op, count, type);
}

CollectiveGuard::Scope::~Scope() { guard_.end(); }

}  // namespace fastnn
