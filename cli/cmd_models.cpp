// `fastnn models [--json] [--num-classes N]`: every zoo model with its trainable parameter count,
// forward multiply-adds at its default input size, the default input and preprocessing preset
// (trainer/zoo/zoo_table.h). --json prints one JSON array.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "trainer/zoo/zoo_table.h"

namespace fastnn::cli {

void add_models_command(CLI::App& app) {
  struct Args {
    bool json = false;
    int num_classes = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("models", "List the model zoo: parameters, multiply-adds at the default input "
                                               "size, default input and preprocessing preset");
  cmd->add_flag("--json", a->json, "Print one JSON array");
  cmd->add_option("--num-classes", a->num_classes, "Classes of the classifier (0: each model's default; TF-slim's "
                                                   "ImageNet checkpoints have 1001)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->callback([a] {
    const auto rows = zoo::zoo_table(a->num_classes);
    if (a->json)
      std::printf("%s\n", zoo::zoo_table_json(rows).dump(2).c_str());
    else
      std::fputs(zoo::zoo_table_text(rows).c_str(), stdout);
    std::fflush(stdout);
  });
}

}  // namespace fastnn::cli
