// The `fastnn` executable: parses arguments, runs one subcommand, maps errors to exit codes:
// 0 success (and --help, --version), 1 an error (fastnn::Error, and an internal one, and a failed write
// to stdout), 2 a usage error (bad flag, missing argument, unknown subcommand), 128+signal after
// SIGTERM/SIGINT (train).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/error_report.h"
#include "core/check.h"
#include "core/crash_report.h"
#include "core/logging.h"
#include "trainer/config/config_fields.h"
#include "trainer/runner/build_info.h"
#include "trainer/ops/blas_core.h"

namespace {

// Every command takes both spellings of a flag (docs/CONFIG.md): an argument `--x_y[=v]` that the
// command being parsed lacks becomes `--x-y[=v]` when it has that one, and the other way round. train
// and eval take config fields, whose '-' spelling trainer/config/overrides.h accepts itself.
void accept_both_spellings(CLI::App& app, int argc, char** argv, std::vector<std::string>& respelled) {
  respelled.reserve(static_cast<size_t>(argc));  // argv points into it: no reallocation
  CLI::App* cmd = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("--")) {
      try {
        cmd = cmd->get_subcommand(arg);
      } catch (const CLI::Error&) {  // a positional argument or a flag's value
      }
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    if (cmd->get_option_no_throw(name) != nullptr) continue;
    std::string other = name;
    for (size_t k = 2; k < other.size(); ++k)
      if (other[k] == '_' || other[k] == '-') other[k] = other[k] == '_' ? '-' : '_';
    if (cmd->get_option_no_throw(other) == nullptr) continue;
    respelled.push_back(other + (eq == std::string::npos ? "" : arg.substr(eq)));
    argv[i] = respelled.back().data();
  }
}

// What a command printed on stdout is its result (predict's lines, eval --json, inspect, check): a
// write that failed (a full disk, a closed file) is an error naming stdout and the reason, exit 1, never
// a silent 0. stdout goes through a stream of ours that remembers the first failed write's errno:
// glibc drops a buffer whose write failed, so by exit nothing would say why.
int stdout_errno = 0;

ssize_t write_stdout(void*, const char* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::write(STDOUT_FILENO, buf + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (stdout_errno == 0) stdout_errno = r < 0 ? errno : EIO;
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(n);
}

void track_stdout_errors() {
  cookie_io_functions_t io{};
  io.write = write_stdout;
  FILE* f = ::fopencookie(nullptr, "w", io);
  if (!f) return;  // keep the plain stdout: errors are still caught, only their reason is lost
  std::fflush(stdout);
  std::setvbuf(f, nullptr, ::isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, size_t{1} << 16);
  stdout = f;
}

int with_stdout_checked(int code) {
  const bool flushed = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const bool closed = std::fclose(stdout) == 0;
  if ((flushed && closed) || stdout_errno == EPIPE) return code;  // a reader that stopped early (| head)
  std::fprintf(stderr, "fastnn: error: cannot write to stdout: %s\n",
               stdout_errno != 0 ? std::strerror(stdout_errno) : "a write failed");
  return code == 0 ? 1 : code;
}

// The first word that is not a flag must name a command: "fastnn trian" says "did you mean train?"
// instead of CLI11's "A subcommand is required". Empty when it does.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(word)) return "";
    names.push_back(sub->get_name());
  }
  const std::vector<std::string> near = fastnn::closest_names(names, word, 2);
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return near.empty() ? "unknown command '" + word + "'; the commands are: " + list
                      : "unknown command '" + word + "'; did you mean " + near[0] +
                            (near.size() > 1 ? " or " + near[1] : "") + "? (`fastnn --help` lists them)";
}

// Whether the subcommand may run a model's graph on the CPU (oneDNN's OpenMP threads among them).
bool runs_cpu_graphs(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string_view sub = argv[1];
  for (const char* s : {"train", "eval", "predict", "serve", "bench", "export"})
    if (sub == s) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  fastnn::install_crash_report("fastnn");  // a fatal signal says where, not only status 139
  track_stdout_errors();
  // OpenBLAS's kernels for this CPU and OpenMP's waiting (trainer/ops/blas_core.h), before any thread of
  // ours runs: where OpenBLAS fell back to its generic kernels or OMP_WAIT_POLICY is to be set, fastnn
  // starts again with them set.
  fastnn::ops::cpu::reexec_with_cpu_library_settings(argv, runs_cpu_graphs(argc, argv));
  fastnn::ops::cpu::blas_core();
  CLI::App app{"fastnn: raw image datasets to trained classifiers on NVIDIA GPUs"};
  // --version: the version, then the backends this build has and their libraries' versions.
  app.set_version_flag("--version", [] { return std::string("fastnn ") + FASTNN_VERSION + "\n" + fastnn::runner::build_info(); });
  app.require_subcommand(1);
  fastnn::cli::add_convert_command(app);
  fastnn::cli::add_check_command(app);
  fastnn::cli::add_inspect_command(app);
  fastnn::cli::add_bench_command(app);
  fastnn::cli::add_train_command(app);
  fastnn::cli::add_eval_command(app);
  fastnn::cli::add_predict_command(app);
  fastnn::cli::add_models_command(app);
  fastnn::cli::add_export_command(app);
  fastnn::cli::add_report_command(app);
  fastnn::cli::add_serve_command(app);
  std::vector<std::string> respelled;
  accept_both_spellings(app, argc, argv, respelled);
  if (const std::string wrong = unknown_command(app, argc, argv); !wrong.empty()) {
    std::fprintf(stderr, "fastnn: error: %s\n", wrong.c_str());
    return with_stdout_checked(2);
  }
  try {
    fastnn::check_log_level_env();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help / version); its own codes (105, 106, 109...) become
    // DESIGN.md's: 0 for --help / --version, 2 for every usage error.
    const int code = app.exit(e);
    return with_stdout_checked(code == 0 ? 0 : 2);
  } catch (...) {  // ExitStatus, fastnn::Error, filesystem and other errors (cli/error_report.h)
    return with_stdout_checked(fastnn::cli::report_error(std::current_exception()));
  }
  return with_stdout_checked(0);
}
