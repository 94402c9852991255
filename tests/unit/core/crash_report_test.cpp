// install_crash_report: a process that gets a fatal signal prints the program's name, the signal and a
// backtrace to stderr, and still dies of that signal (its exit status is what it would have been).
#include "core/crash_report.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace fastnn {
namespace {

struct Death {
  int signal = 0;
  std::string stderr_text;
};

// Runs `body` in a child with the report installed; the child's fatal signal and stderr.
template <typename F>
Death die_in_child(F body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    install_crash_report("crash_report_test_child");
    body();
    _exit(0);  // not reached
  }
  close(fds[1]);
  Death d;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) d.stderr_text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) d.signal = WTERMSIG(status);
  return d;
}

TEST(CrashReport, SegfaultIsReportedAndStillKillsTheProcess) {
  const Death d = die_in_child([] {
    volatile int* p = nullptr;
    *p = 1;
  });
  EXPECT_EQ(d.signal, SIGSEGV);
  EXPECT_NE(d.stderr_text.find("crash_report_test_child: fatal signal 11 (SIGSEGV"), std::string::npos)
      << d.stderr_text;
  EXPECT_NE(d.stderr_text.find("backtrace"), std::string::npos) << d.stderr_text;
}

TEST(CrashReport, AbortIsReported) {
  const Death d = die_in_child([] { abort(); });
  EXPECT_EQ(d.signal, SIGABRT);
  EXPECT_NE(d.stderr_text.find("fatal signal 6 (SIGABRT"), std::string::npos) << d.stderr_text;
}

}  // namespace
}  // namespace fastnn
