// Errors and checks used everywhere in fastnn.
//
// Library code throws fastnn::Error (or a subclass) with enough context to act on: the file, the
// record or line, the byte offset. Only cli/ turns errors into exit codes.
//
//   FASTNN_CHECK(n <= cap, "record length ", n, " exceeds cap ", cap);
//   CUDA_CHECK(cudaMemcpyAsync(...));   // the CUDA/cuDNN/cuBLAS/NCCL macros need the library header
//                                       // included at the use site; this header includes none.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace fastnn {

// Any failure fastnn reports to a user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Malformed or corrupt input data (bad CRC, truncated record, undecodable image, bad label...).
class FormatError : public Error {
 public:
  using Error::Error;
};
// The operating system refused (open, read, write, rename...).
class IoError : public Error {
 public:
  using Error::Error;
};
// A bad configuration value or flag.
class ConfigError : public Error {
 public:
  using Error::Error;
};
// A command line that cannot mean anything: an unknown flag, a value of the wrong type or outside its
// choices. The CLI exits 2 for it (a usage error), 1 for every other Error.
class UsageError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// Concatenates anything streamable: str("record ", i, " at offset ", off).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

namespace detail {
[[noreturn]] void check_failed(const char* file, int line, const char* expr, const std::string& msg);
[[noreturn]] void library_call_failed(const char* file, int line, const char* lib, const char* expr,
                                      const std::string& what);
}  // namespace detail

// IoError for a failed system call on `path`, with strerror(errno).
[[noreturn]] void throw_io_error(const std::string& path, const std::string& action);

}  // namespace fastnn

// An internal invariant or a precondition on arguments; throws fastnn::Error with file and line.
#define FASTNN_CHECK(cond, ...)                                                               \
  do {                                                                                        \
    if (!(cond)) [[unlikely]]                                                                 \
      ::fastnn::detail::check_failed(__FILE__, __LINE__, #cond, ::fastnn::str("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

#define CUDA_CHECK(expr)                                                                          \
  do {                                                                                            \
    cudaError_t fastnn_err_ = (expr);                                                             \
    if (fastnn_err_ != cudaSuccess) [[unlikely]]                                                  \
      ::fastnn::detail::library_call_failed(__FILE__, __LINE__, "CUDA", #expr,                   \
                                            cudaGetErrorString(fastnn_err_));                     \
  } while (0)

// After a kernel launch: reports a bad launch configuration (asynchronous faults surface later, at
// the next synchronising call).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUDNN_CHECK(expr)                                                                         \
  do {                                                                                            \
    cudnnStatus_t fastnn_err_ = (expr);                                                           \
    if (fastnn_err_ != CUDNN_STATUS_SUCCESS) [[unlikely]]                                         \
      ::fastnn::detail::library_call_failed(__FILE__, __LINE__, "cuDNN", #expr,                  \
                                            cudnnGetErrorString(fastnn_err_));                    \
  } while (0)

#define NCCL_CHECK(expr)                                                                          \
  do {                                                                                            \
    ncclResult_t fastnn_err_ = (expr);                                                            \
    if (fastnn_err_ != ncclSuccess) [[unlikely]]                                                  \
      ::fastnn::detail::library_call_failed(__FILE__, __LINE__, "NCCL", #expr,                   \
                                            ncclGetErrorString(fastnn_err_));                     \
  } while (0)
