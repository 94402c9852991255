// `fastnn bench train [--config job.pbtxt] [--name=value ...] [--steps N] [--warmup N] [--image-size S]
// [--json]`: training images/s of a zoo model on synthetic data (trainer/bench/bench_train.h). Job config
// fields (model_name, batch_size, device, use_fp16, precision, optimizer, ...) are --name=value flags as
// for `fastnn train`.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "trainer/config/job_config.h"
#include "trainer/bench/bench_train.h"

namespace fastnn::cli {
namespace {

struct BenchTrainArgs {
  std::string config;
  bench::TrainBenchOptions o;
  bool json = false;
};

}  // namespace

void add_bench_train_command(CLI::App& bench) {
  auto a = std::make_shared<BenchTrainArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "train", "Training images/s of a zoo model on synthetic data (--device=cuda on a GPU); job config fields as "
               "--name=value flags (model_name, batch_size, device, use_fp16, precision, optimizer, ...)");
  cmd->allow_extras();
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--config", a->config, "Job config, protobuf text format (schemas/job_config.proto)");
  cmd->add_option("--steps", a->o.steps, "Timed steps")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--warmup", a->o.warmup, "Steps before the clock starts")->check(CLI::NonNegativeNumber);
  cmd->add_option("--image-size", a->o.image_size, "Input height and width (0: the model's default)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--profile", a->o.profile_steps,
                  "Steps after the timed ones to time layer by layer on the device (0: none); prints where the "
                  "step's milliseconds go, by phase, op type and layer")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([a, cmd] {
    const JobConfig config = load_job_config(a->config, cmd->remaining());
    const bench::TrainBenchResult r = bench::run_train_bench(config, a->o);
    if (a->json) {
      std::printf("%s\n", bench::train_bench_json(r).dump().c_str());
    } else {
      std::printf("train: %s %dx%d, %d classes, %lld parameters, batch %lld on %s, optimizer %s\n", r.model.c_str(),
                  r.height, r.width, r.classes, static_cast<long long>(r.parameters),
                  static_cast<long long>(r.batch_size),
                  r.cpu_bf16 ? "cpu (bf16 convolutions and fully connected layers, f32 otherwise)" : r.target.describe().c_str(),
                  config.optimizer().c_str());
      std::printf("  %.1f images/s, %.2f ms/step over %lld steps after %lld warm-up; loss %.4f -> %.4f",
                  r.images_per_sec, r.ms_per_step, static_cast<long long>(r.steps), static_cast<long long>(r.warmup),
                  r.first_loss, r.last_loss);
      if (r.target.dtype == DType::kF16)
        std::printf(", loss scale %g, %lld skipped", r.loss_scale, static_cast<long long>(r.skipped_steps));
      std::printf("\n");
      if (r.profile) std::printf("%s", r.profile->format().c_str());
    }
    std::fflush(stdout);
  });
}

}  // namespace fastnn::cli
