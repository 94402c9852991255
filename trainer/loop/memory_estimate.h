// The memory a training run will take, estimated before anything large is allocated, and the refusal
// of a run that cannot fit (issue 17: FastNN's defaults, Inception-ResNet-v2 at 299² on 28×28 data, were
// killed by the kernel with no warning).
//
// Host parts (bytes), from the run's NetPlan (shape inference only; on the CPU the plan of the graph its
// runner builds: data_format auto's layout and the fusions that go with it, runner::with_cpu_choices) and
// the job config:
//   parameters   values + gradients of trainable parameters + batch-norm moving statistics (f32)
//   optimizer    the optimizer's slots per updated parameter (momentum 1, adam 2, ...; trainable_scopes),
//                plus one f32 shadow per variable with moving_average_decay
//   activations  what Graph::allocate_activations takes at batch_size: every layer's output, the
//                tensors its kernel saves for backward, its gradient buffer (and extra ones for a
//                tensor read several times), and the largest kernel workspace; plus the input batch
//   pipeline     batches in flight (prefetch_buffer_size + num_parallel_batches + the held ones, and
//                the evaluation pipeline's at the same time) with the records they are built from,
//                the shuffle buffer of records, and the record cache (datasets_use_caching)
//   process      what fastnn holds already when the estimate is made (VmRSS: code, libraries, the
//                manifest), plus the per-thread arenas of the allocator
//   head         the classifier head (loss_type other than softmax, or emb_dim; docs/LARGE_SCALE.md):
//                rank 0's share (the largest) of a dist_ head over `world` ranks, or the whole
//                replicated head, as head::head_memory counts it (weights, gradients, optimizer
//                state, features, logits at the global batch). Every rank checks rank 0's share, so
//                all ranks refuse together instead of one dying in a collective. On device=cuda the
//                head lives on the GPU (f32 rows, classifier_head_cuda.h) and is part of `device`.
// The device part (device=cuda): parameters in the compute dtype, f32 master weights and gradients,
// optimizer slots, activations in the compute dtype, two staged input batches. It leaves out cuDNN's
// workspaces and the CUDA context (a few hundred MiB); it is compiled but unmeasured (no GPU here).
//
// Accuracy on the CPU: within 2% of the measured peak resident memory for LeNet, ResNet-50 and
// Inception-ResNet-v2 at two batch sizes each (docs/PERFORMANCE.md, the command and the figures).
//
// The limit (host): memory_limit_mb when set, else MemAvailable (/proc/meminfo), lowered by the cgroup's
// memory.max when there is one, plus the process's own VmRSS (already counted in the estimate).
// check_memory refuses (ConfigError) a run over the limit, naming every part and the knobs that shrink
// it; with check_memory=false it warns instead.
#pragma once

#include <cstdint>
#include <string>

#include "schemas/job_config.pb.h"
#include "trainer/head/head_memory.h"
#include "trainer/runner/device_setup.h"
#include "trainer/loop/run_setup.h"

namespace fastnn::loop {

struct MemoryEstimate {
  int64_t parameters = 0, optimizer = 0, activations = 0, pipeline = 0, process = 0;
  int64_t device = 0;  // device=cuda only; 0 on the CPU
  bool has_head = false;
  head::HeadMemory head;  // when has_head: rank 0's share
  bool head_on_device = false;  // device=cuda: the head is counted in `device`, not in the host total
  int64_t host_total() const {
    return parameters + optimizer + activations + pipeline + process + (has_head && !head_on_device ? head.total : 0);
  }
};

// `world`: the number of data-parallel ranks (a dist_ head's rows are split over them).
MemoryEstimate estimate_training_memory(const RunSetup& setup, const JobConfig& config, const runner::ComputeTarget& target,
                                        int world = 1);

struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;  // "memory_limit_mb", "MemAvailable + this process", "cgroup memory.max"
};
// The host limit rule above; bytes 0 when it cannot be read (no /proc: no check).
MemoryLimit host_memory_limit(const JobConfig& config);

// The table print_model_statistics prints, e.g.
//   Memory estimate (batch 32, input 3x299x299, host):
//     parameters        213.4 MiB
//     ...
//     total              26.1 GiB   (limit 22.8 GiB: MemAvailable + this process)
std::string format_memory_estimate(const MemoryEstimate& e, const RunSetup& setup, const JobConfig& config,
                                   const MemoryLimit& limit);

// Refuses (ConfigError) or, with check_memory=false, warns about a run whose host estimate exceeds the
// limit, or whose device estimate exceeds the GPU's free memory. When the classifier head alone does
// not fit in what the rest leaves, the refusal is the head's (head_memory_refusal: the world size,
// sample_ratio or batch that would fit): against the host limit, or on device=cuda against the GPU's
// free memory.
void check_memory_fits(const MemoryEstimate& e, const RunSetup& setup, const JobConfig& config,
                       const runner::ComputeTarget& target, const MemoryLimit& limit);

// "213.4 MiB", "26.1 GiB".
std::string bytes_text(int64_t bytes);

}  // namespace fastnn::loop
