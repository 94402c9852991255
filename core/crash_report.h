// A fatal signal's report: install_crash_report() makes SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT
// print "<program>: fatal signal N (name)" and a backtrace of the thread that got it to stderr, then
// die of the same signal (exit status and core dump unchanged). Without it a crash inside `x=$(fastnn
// ...)` under `set -e` ends a script with status 139 and not a word (seen twice in ~5,000 CI test
// processes, never reproduced): the report names the place next time.
//
//   int main(int argc, char** argv) { fastnn::install_crash_report(argv[0]); ... }
#pragma once

namespace fastnn {

// Idempotent; `program` is kept (a pointer, not a copy: argv[0] lives as long as the process).
void install_crash_report(const char* program);

}  // namespace fastnn
