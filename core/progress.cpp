#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

namespace fastnn {
namespace {
constexpr int64_t kDrawIntervalNs = 200'000'000;
}  // namespace

std::string seconds_text(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return buf;
}

Progress::Progress(std::string label, uint64_t total, std::string unit)
    : Progress(std::move(label), total, std::move(unit), ::isatty(STDERR_FILENO) == 1) {}

Progress::Progress(std::string label, uint64_t total, std::string unit, bool interactive)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      interactive_(interactive),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  // An unfinished progress line (error path) is ended so the error message starts on its own line.
  if (interactive_ && !silent_ && !finished_ && count() > 0) std::fputc('\n', stderr);
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::human(double v) {
  char buf[32];
  if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2f G", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.2f k", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f ", v);
  return buf;
}

void Progress::add(uint64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (interactive_ && !silent_) maybe_draw();
}

void Progress::maybe_draw() {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start_).count();
  if (now < next_draw_ns_.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(draw_mu_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  next_draw_ns_.store(now + kDrawIntervalNs, std::memory_order_relaxed);
  std::string l = "\r" + line(false) + "\033[K";
  std::fputs(l.c_str(), stderr);
  std::fflush(stderr);
}

std::string Progress::line(bool final) const {
  uint64_t done = count();
  double secs = elapsed_seconds();
  double rate = secs > 0 ? done / secs : 0;
  std::string s = label_ + ": " + std::to_string(done);
  if (total_ > 0 && !final) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "/%llu (%.1f%%)", static_cast<unsigned long long>(total_),
                  100.0 * done / total_);
    s += pct;
  }
  s += " " + unit_ + " in " + seconds_text(secs) + ", " + human(rate) + unit_ + "/s";
  if (!final && total_ > 0 && rate > 0 && done < total_) s += ", ETA " + seconds_text((total_ - done) / rate);
  return s;
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(draw_mu_);
  if (finished_) return;
  finished_ = true;
  if (silent_) return;
  std::string l = (interactive_ ? "\r" : "") + line(true) + (interactive_ ? "\033[K\n" : "\n");
  std::fputs(l.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace fastnn
