// Each `fastnn` subcommand lives in its own cli/cmd_*.cpp and registers itself here, in the explicit
// list in main.cpp. A command's callback throws fastnn::Error on failure; main() prints it and exits 1.
// A command that must end with another status (train stopped by SIGTERM: 143) throws ExitStatus.
#pragma once

#include <CLI/CLI.hpp>

namespace fastnn::cli {

struct ExitStatus {
  int code;
};

void add_inspect_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_bench_train_command(CLI::App& bench);  // `bench train`, called by add_bench_command
void add_bench_allreduce_command(CLI::App& bench);  // `bench allreduce`, likewise
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace fastnn::cli
