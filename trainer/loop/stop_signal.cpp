#include "trainer/loop/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "core/check.h"

namespace fastnn::loop {
namespace {

std::atomic<int> g_signal{0};  // 0: no stop asked for
std::atomic<bool> g_installed{false};
struct sigaction g_old_term, g_old_int;
constexpr char kTrainNote[] = "fastnn: stop requested; saving a checkpoint at the end of this step "
                              "(signal again to exit at once)\n";
std::atomic<const char*> g_note{kTrainNote};
std::atomic<size_t> g_note_size{sizeof kTrainNote - 1};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) _exit(128 + sig);  // the second one: at once
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, g_note.load(), g_note_size.load());
}

}  // namespace

StopSignalScope::StopSignalScope(const char* note) {
  FASTNN_CHECK(!g_installed.exchange(true), "StopSignalScope: one at a time");
  g_note.store(note ? note : kTrainNote);
  g_note_size.store(note ? std::strlen(note) : sizeof kTrainNote - 1);
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and writes in the loop go on; the loop polls the flag
  ::sigaction(SIGTERM, &sa, &g_old_term);
  ::sigaction(SIGINT, &sa, &g_old_int);
}

StopSignalScope::~StopSignalScope() {
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  ::sigaction(SIGINT, &g_old_int, nullptr);
  g_installed.store(false);
}

bool stop_requested() { return g_signal.load(std::memory_order_relaxed) != 0; }
int stop_signal() { return g_signal.load(std::memory_order_relaxed); }
int stop_exit_code() { return stop_signal() ? 128 + stop_signal() : 0; }
void request_stop_for_testing(int signal) { g_signal.store(signal); }

}  // namespace fastnn::loop
