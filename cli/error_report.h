// How a command's failure reaches the user: one line on stderr and the exit status (DESIGN.md's
// contract: 1 for an error, 2 for a usage error), said the same way by main() and by a rank that
// reports for the whole job under mpirun.
#pragma once

#include <exception>
#include <functional>

namespace fastnn::cli {

// Prints `error` as `fastnn: error: ...` (an ExitStatus prints nothing) and returns the exit status.
int report_error(const std::exception_ptr& error);

// Under mpirun, a failure every rank shares ends every rank the same way: the reporting rank (the one
// given `reported`; null on the others) prints it and flushes stderr, then all meet in `barrier` and
// exit (ExitStatus; the reporter with its error's status, the others 1). mpirun ends the whole job as
// soon as one rank exits non-zero, so a rank that did not wait could kill the reporter before its
// message is out. Only for failures that every rank of the job reaches (all of them call this).
[[noreturn]] void exit_with_the_other_ranks(const std::exception_ptr& reported, const std::function<void()>& barrier);

}  // namespace fastnn::cli
