#include "trainer/loop/capabilities.h"

#include "core/check.h"
#include "core/logging.h"
#include "trainer/head/head_config.h"
#ifdef FASTNN_HAVE_CUDA
#include "trainer/optim/device_optimizer.h"
#endif

namespace fastnn::loop {

void check_backend_supports(const JobConfig& c, const ComputeTarget& t, int world) {
  if (t.device == Device::kCpu) {
    if (c.input_dtype() == "uint8" || c.input_dtype() == "float16")
      throw ConfigError(str("input_dtype=", c.input_dtype(), " is for the GPU (normalised there); the CPU step takes "
                            "float32 batches: use input_dtype=auto or float32 on device=cpu"));
    if (c.use_fp16() || (c.precision() != "auto" && c.precision() != "fp32"))
      log_info("use_fp16 / precision have no effect on the CPU backend (it computes in float32)");
    return;
  }
  if (head::uses_head(c))
    throw ConfigError(str("loss_type=", c.loss_type(), (c.has_emb_dim() ? " with emb_dim" : ""),
                          " (the classifier head, docs/LARGE_SCALE.md) runs on device=cpu only so far: its GPU kernels "
                          "are not written; use device=cpu"));
  if (c.sync_batch_norm() && world > 1)
    throw ConfigError("sync_batch_norm is not available on device=cuda yet (batch-norm statistics across GPUs are "
                      "not written); use device=cpu for synchronised batch norm, or train without sync_batch_norm");
#ifdef FASTNN_HAVE_CUDA
  if (!DeviceOptimizer::supports(c.optimizer()))
    throw ConfigError(str("optimizer=", c.optimizer(), " has no GPU update on device=cuda; use device=cpu for it, or "
                          "one of the optimizers the GPU has (docs/CUDA.md)"));
#endif
}

}  // namespace fastnn::loop
