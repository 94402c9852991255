// SIGTERM / SIGINT during training (docs/TRAINING.md, "Stopping a run"): preemptible clusters send
// SIGTERM and wait a grace period before SIGKILL, so the loop finishes its step, saves a checkpoint at
// that step and returns instead of dying with up to save_checkpoints_steps of work lost.
//
// StopSignalScope installs handlers for SIGTERM and SIGINT for its lifetime and restores the previous
// ones when it ends. The first signal only sets a flag (async-signal-safe: a lock-free atomic); the
// loop polls stop_requested() once per step. A second signal while the flag is set ends the process at
// once with _exit(128 + signal) (no checkpoint, no destructors): the user insisted.
// Scopes do not nest: one StopSignalScope at a time (a second one is a FASTNN_CHECK failure).
// Threading: stop_requested()/stop_signal() may be read from any thread.
#pragma once

namespace fastnn::loop {

class StopSignalScope {
 public:
  // note: the line written to stderr on the first signal (default: training's "saving a checkpoint"
  // note); a static string ending in a newline.
  explicit StopSignalScope(const char* note = nullptr);
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

// A stop was asked for (a first SIGTERM or SIGINT since the scope began).
bool stop_requested();
// The signal that asked for it (SIGTERM, SIGINT), 0 when none.
int stop_signal();
// Exit status a command should end with after a requested stop: 128 + stop_signal() (143 for
// SIGTERM, 130 for SIGINT), the shell's convention for "ended by this signal".
int stop_exit_code();
// Testing: sets the flag as a first signal would (without a signal).
void request_stop_for_testing(int signal);

}  // namespace fastnn::loop
