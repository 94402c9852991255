// `fastnn bench pipeline --data DIR [--split S] --preset NAME --batch-size B --threads T [--steps N]
// [--json]`: the input pipeline's images/s and MB/s, the share of time per stage, and the ceiling
// measured in the same run (pipeline/bench_pipeline.h). --json prints one JSON object.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "core/check.h"
#include "pipeline/bench_pipeline.h"

namespace fastnn::cli {
namespace {

struct BenchArgs {
  pipeline::PipelineBenchOptions o;
  std::string dtype = "float32";
  std::string layout = "NHWC";
  int image_size = 0;
  std::string auto_augment;
  bool eval = false;
  bool no_crop_decode = false;
  bool no_dct_scale = false;
  bool non_deterministic = false;
  bool no_verify = false;
  bool no_ceiling = false;
  bool json = false;
};

void print_human(const pipeline::PipelineBenchOptions& o, const pipeline::PipelineBenchResult& r) {
  const pipeline::AutoAugmentOptions& aa = o.preprocess.auto_augment;
  const std::string augment = !o.preprocess.train || aa.policy == pipeline::AutoAugmentPolicy::kNone ? ""
                              : aa.policy == pipeline::AutoAugmentPolicy::kRandAugment
                                  ? str(", RandAugment ", aa.num_ops, " ops at ", aa.magnitude, " of ", aa.magnitude_bins)
                                  : str(", TrivialAugmentWide ", aa.magnitude_bins, " bins");
  std::printf("pipeline: %s, preset %s (%s%s), batch %d of %s, %d threads\n", o.data.c_str(),
              o.preprocess.preset.c_str(), o.preprocess.train ? "train" : "eval", augment.c_str(), o.batch_size,
              r.sample.c_str(), o.threads);
  std::printf("  %.0f images/s, %.1f MB/s over %llu images in %.2f s\n", r.images_per_sec, r.mb_per_sec,
              static_cast<unsigned long long>(r.images), r.seconds);
  if (o.consume_ms > 0) std::printf("  the caller held each batch %.1f ms (a step's time)\n", o.consume_ms);
  if (o.ceiling)
    std::printf("  ceiling %.0f images/s (bare read+decode+augment loop %.0f images/s on 1 thread × %d): %.0f%%\n",
                r.ceiling_images_per_sec, r.ceiling_single_images_per_sec, o.threads,
                100.0 * r.images_per_sec / r.ceiling_images_per_sec);
  if (o.ceiling && o.parallel_ceiling)
    std::printf("  parallel ceiling %.0f images/s (%d bare loops side by side): %.0f%%\n",
                r.parallel_ceiling_images_per_sec, o.threads,
                100.0 * r.images_per_sec / r.parallel_ceiling_images_per_sec);
  std::printf("  CPU: the pipeline got %.2f cores, %.0f images per CPU second", r.cpu_cores, r.images_per_cpu_sec);
  if (o.ceiling)
    std::printf("; the ceiling's thread got %.2f cores, %.0f images per CPU second: %.0f%%", r.ceiling_cpu_cores,
                r.ceiling_images_per_cpu_sec, 100.0 * r.images_per_cpu_sec / r.ceiling_images_per_cpu_sec);
  std::printf("\n");
  std::printf("  time per stage: read %.1f%%, parse %.1f%%, decode %.1f%%, augment %.1f%%; caller waited %.0f%%\n",
              100 * r.share_read, 100 * r.share_parse, 100 * r.share_decode, 100 * r.share_augment,
              100 * r.consumer_wait_share);
  std::printf("  batch buffers %llu of %d, peak RSS %.0f MB\n", static_cast<unsigned long long>(r.buffers_allocated),
              r.pool_capacity, r.peak_rss_mb);
  std::fflush(stdout);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  add_bench_train_command(*bench);
  add_bench_allreduce_command(*bench);
  auto a = std::make_shared<BenchArgs>();
  a->o.threads = std::max(1u, std::thread::hardware_concurrency());
  CLI::App* cmd = bench->add_subcommand(
      "pipeline", "Input pipeline throughput (images/s, MB/s, time per stage) beside its same-run ceiling: the "
                  "single-thread rate of the bare read + decode + augment loop × threads");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--data", a->o.data, "Shard folder (manifest.json, or <split>-*.tfrecord files)")->required();
  cmd->add_option("--split", a->o.split, "Split to read");
  cmd->add_option("--preset", a->o.preprocess.preset, "preprocessing_name: lenet, cifarnet, inception, vgg, resnet, torchvision");
  cmd->add_option("--batch-size", a->o.batch_size, "Samples per batch")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--threads", a->o.threads, "num_preprocessing_threads")->check(CLI::Range(1, 1024));
  cmd->add_option("--steps", a->o.steps, "Batches' worth of samples the workers produce while the clock runs")->check(CLI::Range(2, 1 << 30));
  cmd->add_option("--warmup", a->o.warmup_steps, "Batches before the clock starts")->check(CLI::NonNegativeNumber);
  cmd->add_option("--rounds", a->o.rounds, "Pipeline and ceiling take turns this many times")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--image-size", a->image_size, "Output height and width (0: the preset's)")
      ->check(CLI::Range(0, 16384));
  cmd->add_option("--channels", a->o.preprocess.channels, "Output channels (0: the preset's)")->check(CLI::Range(0, 3));
  cmd->add_option("--dtype", a->dtype, "Batch dtype: float32, float16, uint8");
  cmd->add_option("--layout", a->layout, "Batch layout: NHWC, NCHW");
  cmd->add_flag("--eval", a->eval, "The preset's evaluation variant (deterministic)");
  cmd->add_flag("--color-distortion", a->o.preprocess.color_distortion, "inception: random brightness/saturation");
  cmd->add_option("--auto-augment", a->auto_augment,
                  "randaugment or trivialaugmentwide: torchvision's, on each training image (auto_augment)");
  cmd->add_option("--auto-augment-num-ops", a->o.preprocess.auto_augment.num_ops, "RandAugment's num_ops");
  cmd->add_option("--auto-augment-magnitude", a->o.preprocess.auto_augment.magnitude, "RandAugment's magnitude bin");
  cmd->add_option("--auto-augment-magnitude-bins", a->o.preprocess.auto_augment.magnitude_bins,
                  "num_magnitude_bins (both policies)");
  cmd->add_flag("--no-crop-decode", a->no_crop_decode, "JPEG: decode whole images, not only the crop window");
  cmd->add_flag("--no-dct-scale", a->no_dct_scale, "JPEG: no 1/2, 1/4, 1/8 scaling in the IDCT");
  cmd->add_option("--shuffle-buffer", a->o.shuffle_buffer, "shuffle_buffer_size (0: no shuffle)");
  cmd->add_option("--prefetch", a->o.prefetch, "prefetch_buffer_size (batches)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--num-parallel-batches", a->o.num_parallel_batches, "Batches mapped at once")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--cycle-length", a->o.cycle_length, "Files interleaved")->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--cache", a->o.cache, "Cache the records in memory after the first epoch");
  cmd->add_flag("--non-deterministic", a->non_deterministic, "Let batches overtake each other");
  cmd->add_flag("--no-verify", a->no_verify, "Skip record data CRCs");
  cmd->add_option("--seed", a->o.seed, "Shuffle and augmentation seed");
  cmd->add_option("--consume-ms", a->o.consume_ms,
                  "Hold each batch this long before taking the next (a training step's time): the images per CPU "
                  "second then include what the waiting workers cost")
      ->check(CLI::Range(0.0, 60000.0));
  cmd->add_flag("--no-ceiling", a->no_ceiling, "Skip the ceiling measurement");
  cmd->add_flag("--parallel-ceiling", a->o.parallel_ceiling,
                "Also measure `threads` bare loops running side by side (the ceiling with their contention)");
  cmd->add_option("--ceiling-images", a->o.ceiling_images, "Images in the ceiling loop (0: pipeline images / threads)");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([a] {
    pipeline::PipelineBenchOptions o = a->o;
    o.preprocess.dtype = pipeline::parse_batch_dtype(a->dtype);
    o.preprocess.layout = pipeline::parse_batch_layout(a->layout);
    o.preprocess.height = o.preprocess.width = a->image_size;
    o.preprocess.train = !a->eval;
    o.preprocess.auto_augment.policy = pipeline::parse_auto_augment(a->auto_augment);
    o.preprocess.crop_decode = !a->no_crop_decode;
    o.preprocess.dct_scale = !a->no_dct_scale;
    o.deterministic = !a->non_deterministic;
    o.verify_data_crc = !a->no_verify;
    o.ceiling = !a->no_ceiling;
    pipeline::PipelineBenchResult r = pipeline::run_pipeline_bench(o);
    if (a->json) {
      std::printf("%s\n", pipeline::bench_json(o, r).dump().c_str());
      std::fflush(stdout);
    } else {
      print_human(o, r);
    }
  });
}

}  // namespace fastnn::cli
