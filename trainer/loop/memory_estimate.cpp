#include "trainer/loop/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/check.h"
#include "core/logging.h"
#include "trainer/config/job_config.h"
#include "trainer/graph/net_plan.h"
#include "trainer/head/head_config.h"
#include "trainer/optim/optimizer_catalog.h"
#include "trainer/runner/step_runner.h"
#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace fastnn::loop {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Slots per updated parameter element.
int64_t optimizer_slots(const JobConfig& c) {
  return static_cast<int64_t>(optim::slot_inits(optimizer_options(c)).size());
}

bool under(const std::string& name, const std::vector<std::string>& scopes) {
  return scopes.empty() || std::any_of(scopes.begin(), scopes.end(), [&](const std::string& s) { return name.starts_with(s); });
}

// A "key:   123 kB" line of a /proc file, in bytes; -1 when absent.
int64_t proc_kb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  return -1;
}

int64_t cgroup_room() {  // memory.max - memory.current of the process's cgroup (v2), -1 when unlimited
  std::ifstream cg("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cg, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  const std::string dir = "/sys/fs/cgroup" + path;
  std::ifstream max_in(dir + "/memory.max"), cur_in(dir + "/memory.current");
  std::string max_text;
  int64_t current = 0;
  if (!(max_in >> max_text) || max_text == "max" || !(cur_in >> current)) return -1;
  return std::stoll(max_text) - current;
}

// Batch bytes the pipeline makes: the runner's dtype (float32 on the CPU, uint8 by default on cuda).
int64_t batch_bytes(const RunSetup& s, int64_t batch) {
  const auto elem = static_cast<int64_t>(dtype_size(s.batch.dtype));
  return batch * s.channels * s.height * s.width * elem + batch * 8;
}

}  // namespace

MemoryEstimate estimate_training_memory(const RunSetup& s, const JobConfig& c, const runner::ComputeTarget& target, int world) {
  MemoryEstimate e;
  if (head::uses_head(c)) {
    // Both heads keep f32 rows and no master copy (the GPU's whatever the compute dtype); a dist_ head
    // sees the global batch.
    const bool sharded = head::is_model_parallel_loss(c.loss_type());
    const int ranks = sharded ? std::max(1, world) : 1;
    e.has_head = true;
    e.head = head::head_memory(s.num_classes, c.emb_dim(), ranks, 0, int64_t{c.batch_size()} * ranks,
                               sharded ? c.sample_ratio() : 1.0, 4, static_cast<int>(optimizer_slots(c)),
                               false);
  }
  const int64_t batch = c.batch_size();
  // The plan of the graph the runner builds, with its fusions and, on the CPU, its layout: data_format auto's
  // NHWC with the one-pass batch_norm+relu fusions held about a third less than the NCHW plan counted
  // (ResNet-50 at batch 8: 1.8 GiB peak RSS against an estimate of 2.6 GiB). A cuda run is planned on the
  // CPU's NCHW kernels (its own cannot be made without a GPU).
  const runner::StepRunnerOptions o = runner::with_cpu_choices(s.net, runner::step_runner_options(c, target));
  const graph::NetPlan plan = graph::NetPlan::make(
      s.net, {.batch_size = batch, .fuse = o.fuse, .layout = target.device == Device::kCpu ? o.layout : Layout::kNCHW,
              .fuse_conv_bn = o.fuse_conv_bn});
  const std::vector<std::string> scopes = split_list(c.trainable_scopes());
  int64_t trainable = 0, updated = 0, state = 0, fixed = 0;
  for (const graph::PlanNode& n : plan.nodes()) {
    for (const graph::PlannedTensor& p : n.params) {
      if (!p.trainable) {
        fixed += p.numel();
        continue;
      }
      trainable += p.numel();
      if (under(p.name, scopes)) updated += p.numel();
    }
    for (const graph::PlannedTensor& st : n.state) state += st.numel();
  }
  e.parameters = 4 * (2 * trainable + fixed + state);
  e.optimizer = 4 * optimizer_slots(c) * updated;
  if (c.moving_average_decay() > 0) e.optimizer += 4 * (trainable + fixed + state);  // one shadow per variable

  // Graph::allocate_activations, by shapes (a unit test keeps the two equal).
  const auto& nodes = plan.nodes();
  std::vector<bool> needs_grad(nodes.size());
  std::vector<size_t> max_uses(nodes.size()), total_uses(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    needs_grad[i] = nodes[i].trainable_params() > 0;
    for (int p : nodes[i].inputs)
      if (p != graph::kDataInput && needs_grad[static_cast<size_t>(p)]) needs_grad[i] = true;
    std::map<int, size_t> uses;
    for (int p : nodes[i].inputs)
      if (p != graph::kDataInput) ++uses[p];
    for (auto [p, n] : uses) {
      max_uses[static_cast<size_t>(p)] = std::max(max_uses[static_cast<size_t>(p)], n);
      total_uses[static_cast<size_t>(p)] += n;
    }
  }
  int64_t act = 0, workspace = 0;
  const bool cpu_bf16 = target.device == Device::kCpu && c.precision() == "bf16";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const graph::PlanNode& n = nodes[i];
    const ops::OpSignature& sig = n.kernel->signature();
    const int64_t out = shape_numel(n.output_shape) * 4;
    const bool is_output = static_cast<int>(i) == plan.logits_node() || static_cast<int>(i) == plan.aux_logits_node();
    act += out;
    for (const ops::TensorSpec& t : sig.saved) act += shape_numel(t.shape) * static_cast<int64_t>(dtype_size(t.dtype));
    // precision=bf16 on the CPU: each convolution and fully connected layer keeps its input rounded to
    // bf16 for the filter gradient.
    if (cpu_bf16 && graph::multiplies_in_cpu_bf16(n.op)) act += shape_numel(sig.inputs[0].shape) * 2;
    if (needs_grad[i] || is_output) act += out;
    if (needs_grad[i] && total_uses[i] + (is_output ? 1 : 0) > 1) act += static_cast<int64_t>(max_uses[i]) * out;
    workspace = std::max(workspace, static_cast<int64_t>(sig.workspace_bytes));
  }
  const int64_t graph_activations = act + workspace;
  e.activations = graph_activations + batch_bytes(s, batch);

  // The pipeline: batches queued, being built and held, for training and (at the same time) evaluation;
  // the shuffle buffer and the cache hold records as stored (mean record size of the train files).
  const int64_t in_flight = std::max(1, c.prefetch_buffer_size()) + std::max(1, c.num_parallel_batches()) + 2;
  const int64_t eval_batches = s.eval_split.empty() ? 0 : in_flight;
  int64_t file_bytes = 0, records = 0;
  for (const auto& f : s.train_files.files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f.path, ec);
    if (!ec) file_bytes += static_cast<int64_t>(size);
    records += std::max<int64_t>(0, f.records);
  }
  const int64_t record = records > 0 ? file_bytes / records : 0;
  // Each batch being built also holds its records (docs/PERFORMANCE.md, pipeline peak RSS: "pool record
  // strings").
  e.pipeline = (in_flight + eval_batches) * (batch_bytes(s, batch) + batch * record) +
               std::min<int64_t>(c.shuffle_buffer_size(), records) * record + (c.datasets_use_caching() ? file_bytes : 0);

  // What the process holds now, and glibc's per-thread arenas (up to 8 x cores, 64 MiB reserved each,
  // of which the pipeline's workers touch a few MiB).
  e.process = std::max<int64_t>(0, proc_kb("/proc/self/status", "VmRSS"));
  e.process += static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency())) * 4 * kMiB;

  if (target.device == Device::kCuda) {
    const int64_t d = static_cast<int64_t>(dtype_size(target.dtype));
    const int64_t master = target.dtype == DType::kF32 ? 0 : 4 * 2 * trainable;  // f32 master + f32 grads
    e.device = d * (2 * trainable + fixed) + 4 * state + master + e.optimizer + graph_activations / 4 * d +
               2 * batch_bytes(s, batch);
    e.head_on_device = e.has_head;
    if (e.has_head) e.device += e.head.total;
  }
  return e;
}

MemoryLimit host_memory_limit(const JobConfig& c) {
  if (c.memory_limit_mb() > 0) return {static_cast<int64_t>(c.memory_limit_mb() * static_cast<double>(kMiB)), "memory_limit_mb"};
  const int64_t available = proc_kb("/proc/meminfo", "MemAvailable");
  const int64_t rss = std::max<int64_t>(0, proc_kb("/proc/self/status", "VmRSS"));
  if (available < 0) return {0, "unknown (no /proc/meminfo)"};
  MemoryLimit l{available + rss, "MemAvailable + this process"};
  if (const int64_t room = cgroup_room(); room >= 0 && room + rss < l.bytes) l = {room + rss, "cgroup memory.max"};
  return l;
}

std::string bytes_text(int64_t b) {
  char buf[32];
  const double v = static_cast<double>(b);
  if (v >= 1024.0 * kMiB) std::snprintf(buf, sizeof buf, "%.1f GiB", v / (1024.0 * kMiB));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", v / kMiB);
  return buf;
}

std::string format_memory_estimate(const MemoryEstimate& e, const RunSetup& s, const JobConfig& c,
                                   const MemoryLimit& limit) {
  std::ostringstream os;
  auto row = [&os](const char* name, int64_t b, const std::string& note) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-13s %12s   %s\n", name, bytes_text(b).c_str(), note.c_str());
    os << buf;
  };
  os << "Memory estimate of " << s.model_name << " (batch " << c.batch_size() << ", input " << s.channels << "x"
     << s.height << "x" << s.width << ", host):\n";
  row("parameters", e.parameters, "values, gradients, moving statistics (f32)");
  row("optimizer", e.optimizer, c.optimizer() + " slots" + (c.moving_average_decay() > 0 ? ", moving averages" : ""));
  row("activations", e.activations, str("at batch ", c.batch_size(), ": outputs, saved tensors, gradients"));
  row("pipeline", e.pipeline, str("prefetch_buffer_size ", c.prefetch_buffer_size(), " + num_parallel_batches ",
                                  c.num_parallel_batches(), " batches, shuffle buffer", c.datasets_use_caching() ? ", cache" : ""));
  row("process", e.process, "fastnn itself (code, libraries) and thread arenas");
  if (e.has_head)
    row("head", e.head.total, str("classifier head, rank 0 of ", e.head.world_size, ": ", e.head.rows, " rows x ",
                                  e.head.emb_dim, e.head_on_device ? " (on the GPU: in `device`, not in the total)" : "",
                                  " (docs/LARGE_SCALE.md)"));
  row("total", e.host_total(), limit.bytes > 0 ? str("limit ", bytes_text(limit.bytes), " (", limit.source, ")") : "");
  if (e.device > 0) row("device", e.device, "GPU: weights, master copy, optimizer, activations, 2 batches (no cuDNN workspace)");
  return os.str();
}

void check_memory_fits(const MemoryEstimate& e, const RunSetup& s, const JobConfig& c, const runner::ComputeTarget& target,
                       const MemoryLimit& limit) {
  std::string problem;
  int64_t gpu_free = 0;
  if (limit.bytes > 0 && e.host_total() > limit.bytes)
    problem = str("the run needs an estimated ", bytes_text(e.host_total()), " of host memory, and ",
                  bytes_text(limit.bytes), " is available (", limit.source, ")");
#ifdef FASTNN_HAVE_CUDA
  if (problem.empty() && target.device == Device::kCuda) {
    size_t free_bytes = 0, total_bytes = 0;
    runner::select_device(target);
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && e.device > static_cast<int64_t>(free_bytes)) {
      gpu_free = static_cast<int64_t>(free_bytes);
      problem = str("the run needs an estimated ", bytes_text(e.device), " of GPU memory, and ",
                    target.describe(), " has ", bytes_text(gpu_free), " free");
    }
  }
#else
  (void)target;
#endif
  if (problem.empty()) return;
  // The head alone does not fit in what the rest leaves (of the host, or of the GPU it lives on): its own
  // refusal names the way out.
  const int64_t available = e.head_on_device ? gpu_free : limit.bytes;
  if (e.has_head && available > 0) {
    const int64_t rest = e.head_on_device ? e.device - e.head.total : e.host_total() - e.head.total;
    const int64_t room = available - rest;
    if (e.head.total > room) {
      const std::string where = e.head_on_device ? str(target.describe(), " (free memory, less ", bytes_text(rest), " for the rest of the run)")
                                                 : str("host memory (", limit.source, ", less ", bytes_text(rest), " for the rest of the run)");
      const std::string msg = head::head_memory_refusal(e.head, std::max<int64_t>(0, room), where);
      if (c.check_memory()) throw ConfigError(msg);
      log_warn(msg);
      return;
    }
  }
  std::string data;
  if (s.manifest.image.height > 0 && s.manifest.image.width > 0 &&
      (s.manifest.image.height != s.height || s.manifest.image.width != s.width))
    data = str(", the data is ", s.manifest.image.height, "x", s.manifest.image.width);
  const std::string msg = str(
      problem, ": parameters ", bytes_text(e.parameters), ", optimizer state ", bytes_text(e.optimizer),
      ", activations ", bytes_text(e.activations), " (", s.model_name, " trains at ", s.height, "x", s.width, data,
      "), pipeline buffers ", bytes_text(e.pipeline), ", fastnn itself ", bytes_text(e.process),
      ". To fit: lower batch_size (now ", c.batch_size(), "; activations scale with it), choose a smaller model_name",
      data.empty() ? "" : " made for the data's size (model_name=lenet for 28x28, resnet_cifar_56 for 32x32: `fastnn models`)",
      ", "
      "lower prefetch_buffer_size (", c.prefetch_buffer_size(), ") and num_parallel_batches (", c.num_parallel_batches(),
      ")", c.datasets_use_caching() ? ", turn off datasets_use_caching" : "",
      "; or set check_memory=false to try anyway (print_model_statistics shows the estimate)");
  if (c.check_memory()) throw ConfigError(msg);
  log_warn(msg);
}

}  // namespace fastnn::loop
