// `fastnn bench allreduce [--name=value ...] [--sizes B,B,...] [--iters N] [--warmup N] [--json]`: the
// gradient allreduce's time and bandwidth per message size (trainer/bench/bench_allreduce.h). Run it
// under the launcher to measure a real world: `mpirun -np 8 fastnn bench allreduce --device=cuda`.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "trainer/config/job_config.h"
#include "trainer/bench/bench_allreduce.h"

namespace fastnn::cli {
namespace {

struct BenchAllreduceArgs {
  std::string config;
  bench::AllreduceBenchOptions o;
  bool json = false;
};

}  // namespace

void add_bench_allreduce_command(CLI::App& bench) {
  auto a = std::make_shared<BenchAllreduceArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "allreduce", "Gradient allreduce time and bandwidth per message size over the job's ranks (MPI on the CPU, "
                   "NCCL with --device=cuda); start it with mpirun for several ranks");
  cmd->allow_extras();
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--config", a->config, "Job config, protobuf text format (schemas/job_config.proto)");
  cmd->add_option("--sizes", a->o.bytes, "Message sizes in bytes, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 34));
  cmd->add_option("--iters", a->o.iters, "Timed calls per size")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--warmup", a->o.warmup, "Untimed calls per size first")->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--model", a->o.model,
                "Also time one gradient average of --model_name's parameters in allreduce_bucket_mb buckets");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([a, cmd] {
    const JobConfig config = load_job_config(a->config, cmd->remaining());
    const bench::AllreduceBenchResult r = bench::run_allreduce_bench(config, a->o);
    if (r.rank != 0) return;
    if (a->json) {
      std::printf("%s\n", bench::allreduce_bench_json(r).dump().c_str());
    } else {
      std::printf("allreduce (average, float32) over %d rank(s), %s on %s; median of %d calls\n", r.world_size,
                  r.backend.c_str(), r.target.describe().c_str(), a->o.iters);
      std::printf("%14s %12s %12s %14s %14s %14s\n", "bytes", "median ms", "min ms", "algbw GB/s", "busbw GB/s",
                  "memcpy GB/s");
      for (const bench::AllreduceBenchRow& w : r.rows) {
        std::printf("%14lld %12.4f %12.4f %14.2f %14.2f", static_cast<long long>(w.bytes), w.median_ms, w.min_ms,
                    w.algbw_gbps, w.busbw_gbps);
        if (w.copy_gbps > 0) std::printf(" %14.2f\n", w.copy_gbps);
        else std::printf(" %14s\n", "-");  // a GPU: no host copy to compare with
      }
      if (r.model)
        std::printf("gradient average of %s: %lld parameters in %zu bucket(s), median %.3f ms, min %.3f ms\n",
                    r.model->model.c_str(), static_cast<long long>(r.model->parameters), r.model->buckets,
                    r.model->median_ms, r.model->min_ms);
    }
    std::fflush(stdout);
  });
}

}  // namespace fastnn::cli
