#include "trainer/bench/bench_train.h"

#include <algorithm>
#include <optional>

#include "core/check.h"
#include "trainer/loop/capabilities.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::bench {

TrainBenchResult run_train_bench(const JobConfig& c, const TrainBenchOptions& o) {
  FASTNN_CHECK(o.steps >= 1 && o.warmup >= 0 && o.profile_steps >= 0,
               "bench train: need steps >= 1, warmup >= 0 and profile steps >= 0, got ", o.steps, ", ", o.warmup, ", ",
               o.profile_steps);
  if (c.batch_size() < 1) throw ConfigError(str("batch_size must be >= 1, got ", c.batch_size()));
  if (c.gradient_accumulation_steps() != 1)  // its synthetic batches are one batch_size each
    throw ConfigError("bench train times steps of one batch: leave gradient_accumulation_steps at 1");
  const zoo::ZooModel& model = zoo::zoo_model(c.model_name());
  const int size = o.image_size;
  const NetDef net = zoo::build_net(c.model_name(), {.num_classes = c.has_num_classes() ? static_cast<int>(c.num_classes()) : 0,
                                                     .height = size, .width = size});
  // Several ranks (mpirun) or comm_backend=nccl on a GPU: every step's gradients are averaged over NCCL,
  // as in training, so the difference to a plain run is the allreduce's cost.
  loop::DataParallel dp(c);
  runner::StepRunnerOptions ro = runner::step_runner_options(c, runner::resolve_compute_target(c, dp.comm().local_rank()));
  // As fastnn train: what the backend cannot do is refused, a flag without effect on it warned about.
  loop::check_backend_supports(c, ro.target, dp.comm().world_size());
  const std::unique_ptr<runner::DeviceCollectives> collectives = loop::make_gradient_collectives(c, dp, ro.target);
  ro.collectives = collectives.get();
  ro.check_labels = false;  // synthetic labels are in range by construction
  std::unique_ptr<runner::StepRunner> runner = runner::make_step_runner(net, ro);
  runner->broadcast_variables();
  graph::Graph& g = runner->graph();

  TrainBenchResult r;
  r.model = model.name;
  r.target = ro.target;
  r.batch_size = c.batch_size();
  r.world_size = dp.world();
  r.gradient_allreduce = collectives ? "nccl" : "none";
  r.fused = std::any_of(g.plan().nodes().begin(), g.plan().nodes().end(), [](const graph::PlanNode& n) {
    return n.op.ends_with("+relu") || n.op.ends_with("+relu6");  // fuse_ops' nodes (the CPU may turn it on)
  });
  r.fuse_conv_bn = ro.fuse_conv_bn;
  r.cuda_graph = ro.cuda_graphs;
  r.steps = o.steps;
  r.warmup = o.warmup;
  const bool nhwc = g.layout() == Layout::kNHWC;  // [N, H, W, C]
  r.data_format = nhwc ? "NHWC" : "NCHW";
  r.cpu_bf16 = ro.cpu_bf16;
  r.height = static_cast<int>(g.input_shape()[nhwc ? 1 : 2]);
  r.width = static_cast<int>(g.input_shape()[nhwc ? 2 : 3]);
  r.classes = static_cast<int>(g.num_classes());
  for (const graph::NamedTensor& p : g.parameters()) r.parameters += p.value.numel();

  auto [images, labels] = runner->synthetic_batch(static_cast<uint64_t>(c.seed()) + 1);
  const float lr = static_cast<float>(c.learning_rate());
  uint64_t step = 0;
  for (int64_t i = 0; i < o.warmup; ++i) {
    const StepResult s = runner->train(images, labels, step++, lr);
    if (i == 0) r.first_loss = s.loss;
  }
  // Timed as `fastnn train` runs: each step's results read one step late (StepRunner::queue_train).
  r.milliseconds = runner->time_ms([&] {
    int64_t arrived = 0;
    auto take = [&](const std::optional<StepResult>& s) {
      if (!s) return;
      if (o.warmup == 0 && arrived++ == 0) r.first_loss = s->loss;
      r.last_loss = s->loss;
    };
    for (int64_t i = 0; i < o.steps; ++i) take(runner->queue_train(images, labels, step++, lr));
    take(runner->drain());
  });
  if (o.profile_steps > 0) {
    StepProfile prof(*runner);
    for (int64_t i = 0; i < o.profile_steps; ++i) {
      prof.begin_step();
      r.last_loss = runner->train(images, labels, step++, lr).loss;
      prof.end_step();
    }
    r.profile = prof.table();
  }
  r.ms_per_step = r.milliseconds / static_cast<double>(o.steps);
  r.images_per_sec = r.milliseconds > 0 ? 1000.0 * static_cast<double>(o.steps * r.batch_size) / r.milliseconds : 0;
  const runner::StepRunnerStats st = runner->stats();
  r.loss_scale = st.loss_scale;
  r.skipped_steps = st.skipped_steps;
  return r;
}

nlohmann::json train_bench_json(const TrainBenchResult& r) {
  nlohmann::json j = {{"bench", "train"},
          {"model", r.model},
          {"device", r.target.device == Device::kCpu ? "cpu" : "cuda"},
          {"device_index", r.target.device_index},
          {"dtype", dtype_name(r.target.dtype)},
          {"cpu_bf16", r.cpu_bf16},
          {"batch_size", r.batch_size},
          {"world_size", r.world_size},
          {"gradient_allreduce", r.gradient_allreduce},
          {"data_format", r.data_format},
          {"fuse_ops", r.fused},
          {"fuse_conv_bn", r.fuse_conv_bn},
          {"cuda_graph", r.cuda_graph},
          {"image_size", {r.height, r.width}},
          {"classes", r.classes},
          {"parameters", r.parameters},
          {"warmup", r.warmup},
          {"steps", r.steps},
          {"milliseconds", r.milliseconds},
          {"ms_per_step", r.ms_per_step},
          {"images_per_sec", r.images_per_sec},
          {"first_loss", r.first_loss},
          {"last_loss", r.last_loss},
          {"loss_scale", r.loss_scale},
          {"skipped_steps", r.skipped_steps}};
  if (r.profile) j["profile"] = r.profile->json();
  return j;
}

}  // namespace fastnn::bench
