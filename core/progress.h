// Progress for long work (conversion, checking, benchmarks).
//
// On a terminal (stderr is a tty) it redraws one line at most 5 times a second with count, rate and
// ETA; otherwise it prints nothing while running and one summary line from finish(). add() is
// thread-safe and cheap (one relaxed atomic add; printing is rate-limited and done by whichever
// thread wins a try-lock).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace fastnn {

// "12.3 s" below two minutes, else "125m04s": progress lines and training ETAs.
std::string seconds_text(double seconds);

class Progress {
 public:
  // total == 0: unknown total (no ETA). unit names what is counted ("records", "bytes").
  Progress(std::string label, uint64_t total, std::string unit = "records");
  // Force terminal or plain mode (tests); the default follows isatty(stderr).
  Progress(std::string label, uint64_t total, std::string unit, bool interactive);
  ~Progress();

  void add(uint64_t n = 1);
  uint64_t count() const { return done_.load(std::memory_order_relaxed); }
  double elapsed_seconds() const;
  // Prints the final line once: "label: N unit in T s (R unit/s)". Idempotent.
  void finish();
  // A silent Progress prints nothing at all (for --quiet and for nested work).
  void set_silent(bool silent) { silent_ = silent; }

  // "1.23 k", "4.56 M": used in progress and summaries.
  static std::string human(double value);

 private:
  void maybe_draw();
  std::string line(bool final) const;

  std::string label_;
  std::string unit_;
  uint64_t total_;
  bool interactive_;
  bool silent_ = false;
  bool finished_ = false;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_;
  std::atomic<int64_t> next_draw_ns_{0};
  std::mutex draw_mu_;
};

}  // namespace fastnn
