// The `fastnn` executable: parses arguments, runs one subcommand, maps errors to exit codes:
// 0 success (and --help, --version), 1 an error (fastnn::Error, and an internal one), 2 a usage error
// (bad flag, missing argument, unknown subcommand), 128+signal after SIGTERM/SIGINT (train).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/check.h"
#include "core/crash_report.h"
#include "trainer/loop/build_info.h"
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

}  // namespace

int main(int argc, char** argv) {
  fastnn::install_crash_report("fastnn");  // a fatal signal says where, not only status 139
  // OpenBLAS's kernels for this CPU (trainer/ops/blas_core.h), before any thread of ours runs: where
  // OpenBLAS fell back to its generic kernels, fastnn starts again with OPENBLAS_CORETYPE set.
  fastnn::ops::cpu::reexec_with_better_blas_core(argv);
  fastnn::ops::cpu::blas_core();
  CLI::App app{"fastnn: raw image datasets to trained classifiers on NVIDIA GPUs"};
  // --version: the version, then the backends this build has and their libraries' versions.
  app.set_version_flag("--version", [] { return std::string("fastnn ") + FASTNN_VERSION + "\n" + fastnn::loop::build_info(); });
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help / version); its own codes (105, 106, 109...) become
    // DESIGN.md's: 0 for --help / --version, 2 for every usage error.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const fastnn::cli::ExitStatus& e) {
    return e.code;
  } catch (const fastnn::Error& e) {
    std::fprintf(stderr, "fastnn: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fastnn: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
