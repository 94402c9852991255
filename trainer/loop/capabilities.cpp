#include "trainer/loop/capabilities.h"

#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "core/logging.h"
#include "trainer/head/head_config.h"
#include "trainer/loop/memory_estimate.h"
#include "trainer/ops/blas_core.h"
#include "trainer/runner/step_runner.h"
#ifdef FASTNN_HAVE_CUDA
#include "trainer/optim/device_optimizer.h"
#endif

namespace fastnn::loop {

void check_backend_supports(const JobConfig& c, const runner::ComputeTarget& t, int world) {
  if (world == 1) {
    const char* one = " has no effect: this is a world of one process (no gradients to average; mpirun starts several)";
    if (c.has_allreduce_bucket_mb()) log_warn("allreduce_bucket_mb=", c.allreduce_bucket_mb(), one);
    if (c.has_collective_timeout_seconds()) log_warn("collective_timeout_seconds=", c.collective_timeout_seconds(), one);
    if (c.has_sync_batch_norm() && c.sync_batch_norm()) log_warn("sync_batch_norm", one);
  }
  if (c.has_profile_at_task() && c.profile_at_task() >= world && c.profile_every_n_iters() > 0)
    log_warn("profile_at_task=", c.profile_at_task(), " has no effect: there are ", world,
             " rank(s), numbered from 0, so nothing is profiled");
  const bool mixing = c.mixup_alpha() > 0 || c.cutmix_alpha() > 0;
  if (mixing && head::uses_head(c))
    throw ConfigError(str("mixup_alpha / cutmix_alpha do not combine with the classifier head (loss_type=", c.loss_type(),
                          "): its margin losses take one label per sample; train without mixing"));
  if (!c.class_weights().empty() && head::uses_head(c))
    throw ConfigError(str("class_weights do not combine with the classifier head (loss_type=", c.loss_type(),
                          "): its margin losses are unweighted; train without class_weights"));
  if (c.gradient_accumulation_steps() > 1) {
    if (head::uses_head(c))
      throw ConfigError(str("gradient_accumulation_steps does not combine with the classifier head (loss_type=",
                            c.loss_type(), ") yet; raise batch_size instead"));
  }
  if (t.device == Device::kCpu) {
    if (c.input_dtype() == "uint8" || c.input_dtype() == "float16")
      throw ConfigError(str("input_dtype=", c.input_dtype(), " is for the GPU (normalised there); the CPU step takes "
                            "float32 batches: use input_dtype=auto or float32 on device=cpu"));
    // precision=bf16 is the CPU's too (its convolutions and fully connected layers multiply in bfloat16;
    // step_runner.cpp refuses it where the CPU has no bf16 instructions); fp16 and loss scaling are the GPU's alone.
    const char* cpu = " has no effect on the CPU backend: it computes in float32 or, with precision=bf16, its convolutions "
                      "and fully connected layers in bfloat16 (loss scaling and fp16 are for device=cuda)";
    const bool explicit_half = ((c.has_use_fp16() && c.use_fp16()) && c.precision() == "auto") || c.precision() == "fp16";
    if (explicit_half) log_warn("use_fp16 / precision=", c.precision(), cpu);
    else if (c.use_fp16() && c.precision() == "auto") log_info("use_fp16 (the default) has no effect on the CPU backend (it computes in float32)");
    // Only where field_effects did not already say so (it does when the config itself is not fp16).
    const bool f16_config = c.precision() == "fp16" || (c.precision() == "auto" && c.use_fp16());
    if (f16_config) {
      if (c.has_loss_scale()) log_warn("loss_scale=", c.loss_scale(), cpu);
      if (c.has_dynamic_loss_scale() && c.dynamic_loss_scale()) log_warn("dynamic_loss_scale", cpu);
      if (c.has_loss_scale_window() && c.dynamic_loss_scale()) log_warn("loss_scale_window=", c.loss_scale_window(), cpu);
    }
    if (const std::string w = ops::cpu::openmp_wait_warning(std::getenv("OMP_WAIT_POLICY")); !w.empty()) log_warn(w);
    if (c.has_conv_search())
      log_warn("conv_search=", c.conv_search(), " has no effect on the CPU backend: it chooses cuDNN algorithms on device=cuda");
    if (c.has_depthwise_conv())
      log_warn("depthwise_conv=", c.depthwise_conv(),
               " has no effect on the CPU backend: it chooses the depthwise convolution's kernels on device=cuda");
    if (c.has_conv_api())
      log_warn("conv_api=", c.conv_api(), " has no effect on the CPU backend: it chooses cuDNN's convolution API on device=cuda");
    if (c.fuse_conv_bn())
      log_warn("fuse_conv_bn has no effect on the CPU backend's speed: each convolution joins its batch norm as one "
               "layer, but the two kernels run in order (bitwise the unfused net); the fused kernel is cuda's");
    if (c.has_conv_pad_channels())
      log_warn("conv_pad_channels=", c.conv_pad_channels() ? "true" : "false",
               " has no effect on the CPU backend: it pads cuDNN's NHWC half-precision convolutions on device=cuda");
    return;
  }
  if (c.fuse_conv_bn() && (t.dtype != DType::kF16 || runner::layout_for(c, t.device) != Layout::kNHWC))
    log_warn("fuse_conv_bn has no effect on speed with precision ", dtype_name(t.dtype), " and data_format ",
             runner::layout_for(c, t.device) == Layout::kNHWC ? "NHWC" : "NCHW",
             ": cuDNN's conv + statistics graph is fp16 channels-last (precision=fp16, data_format=NHWC or auto); "
             "each convolution joins its batch norm, and the two kernels run in order");
  if (head::uses_head(c) && c.cuda_graph())
    log_warn("cuda_graph has no effect with the classifier head (loss_type=", c.loss_type(),
             "): its steps read their results inside the step (PartialFC draws its sample from the labels), so they "
             "run eagerly (docs/LARGE_SCALE.md, \"On the GPU\")");
  if (c.sync_batch_norm() && world > 1)
    throw ConfigError("sync_batch_norm is not available on device=cuda yet (batch-norm statistics across GPUs are "
                      "not written); use device=cpu for synchronised batch norm, or train without sync_batch_norm");
  // The CUDA runner hands its device optimizer only the scoped parameters (step_runner_cuda.cpp), but
  // that path has not run on a GPU: refused until TrainDeviceGpu.TrainableScopesUpdateOnlyThoseParameters
  // has passed on one.
  if (!c.trainable_scopes().empty())
    throw ConfigError("trainable_scopes is not available on device=cuda yet (its GPU path has not been tested on a "
                      "GPU); use --device=cpu to train only some scopes");
  if (mixing)
    throw ConfigError("mixup_alpha / cutmix_alpha are not available on device=cuda yet (the CUDA step's loss takes one "
                      "label per sample); use --device=cpu for mixup and CutMix");
  if (c.gradient_accumulation_steps() > 1)
    throw ConfigError("gradient_accumulation_steps is not available on device=cuda yet (its GPU runner updates after "
                      "every batch); use --device=cpu to accumulate, or raise batch_size");
  if (!c.class_weights().empty())
    throw ConfigError("class_weights are not available on device=cuda yet (the CUDA loss kernel is unweighted); use "
                      "--device=cpu for a weighted loss");
  if (c.moving_average_decay() > 0)
    throw ConfigError("moving_average_decay is not available on device=cuda yet (the averages are updated from "
                      "host variables); use --device=cpu to keep moving averages");
#ifdef FASTNN_HAVE_CUDA
  if (!DeviceOptimizer::supports(c.optimizer()))
    throw ConfigError(str("optimizer=", c.optimizer(), " has no GPU update on device=cuda; use device=cpu for it, or "
                          "one of the optimizers the GPU has (docs/CUDA.md)"));
#endif
}

void check_before_allocating(const RunSetup& s, const JobConfig& c, const runner::ComputeTarget& t, int world, bool chief) {
  check_backend_supports(c, t, world);
  if (c.eval_every_n_steps() > 0 && s.eval_split.empty())
    log_warn("eval_every_n_steps=", c.eval_every_n_steps(), " has no effect: ", c.dataset_dir(),
             " has no validation or test split (name files with eval_files)");
  const MemoryEstimate e = estimate_training_memory(s, c, t, world);
  const MemoryLimit limit = host_memory_limit(c);
  if (chief && e.has_head) {  // the head's bytes per rank, always (docs/LARGE_SCALE.md)
    std::printf("%s\n", head::head_memory_text(e.head).c_str());
    std::fflush(stdout);
  }
  if (chief && c.print_model_statistics()) {
    std::printf("%s", format_memory_estimate(e, s, c, limit).c_str());
    std::fflush(stdout);
  }
  check_memory_fits(e, s, c, t, limit);
}

std::string device_placement_text(const graph::Graph& g, const runner::ComputeTarget& t) {
  std::string out = str("Device placement (", g.plan().nodes().size(), " layers, all on ", t.describe(), "):");
  for (const graph::PlanNode& n : g.plan().nodes()) out += str("\n  ", n.name, "  ", n.type, "  -> ", t.describe());
  return out;
}

}  // namespace fastnn::loop
