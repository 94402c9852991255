// What this build of fastnn can run on, for `fastnn --version`: the backends compiled in and the
// versions of the libraries behind them (CUDA runtime, cuDNN, NCCL, MPI, OpenBLAS), each read from the
// library itself at run time where it can say (so a wheel or Debian library swapped under the binary
// shows), and whether a GPU is present now. Never throws; needs no GPU.
#pragma once

#include <string>

namespace fastnn::runner {

std::string build_info();  // several lines, each "name: value"

}  // namespace fastnn::runner
