#include "trainer/loop/data_parallel.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/check.h"
#include "core/logging.h"
#include "core/named_array.h"
#include "trainer/config/job_config.h"
#include "trainer/comm/world_check.h"
#include "trainer/loop/stop_signal.h"

namespace fastnn::loop {
namespace {

// Step metrics averaged over the ranks: loss, main_loss, aux_loss, correct, correct_top5,
// examples, data wait seconds, and the stop flag (stop_signal.h; > 0 after averaging if any rank
// was signalled, so every rank stops after the same step).
constexpr size_t kStepMetrics = 9;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t rank_seed(uint64_t seed, int rank) {
  return rank == 0 ? seed : seed ^ splitmix64(static_cast<uint64_t>(rank));
}

int64_t resume_replay_batches(const CheckpointMeta& meta, int world, int64_t batch, int64_t batches_per_epoch) {
  const int64_t global = static_cast<int64_t>(world) * batch;
  if (!meta.has_config()) return meta.step();
  const int64_t saved_global = static_cast<int64_t>(std::max(1, meta.world_size())) * step_batch_size(meta.config());
  if (saved_global == global) return meta.step();
  // Another global batch: keep the epoch, and as much of it as the new batches cover.
  return meta.epoch() * batches_per_epoch + meta.samples_in_epoch() / global;
}

DataParallel::DataParallel(const JobConfig& c) {
  CommOptions o;
  o.backend = c.comm_backend();
  o.collective_timeout_seconds = c.collective_timeout_seconds();
  comm_ = make_communicator(o);
  if (world() == 1) return;
  agreed([&] { check_job_config_consistency(*comm_, c); });  // one configuration per job (world_check.h)
  // Rank 0 tells the story; the others only warn (unless FASTNN_LOG_LEVEL asks for more).
  if (!chief() && std::getenv("FASTNN_LOG_LEVEL") == nullptr && log_level() == LogLevel::kInfo)
    set_log_level(LogLevel::kWarn);
  log_info("data-parallel over ", world(), " ranks (", comm_->name(), ", ", comm_->local_size(),
           " on this machine): batch_size ", c.batch_size(), " per rank, global batch ",
           static_cast<int64_t>(world()) * step_batch_size(c), ", collective timeout ", c.collective_timeout_seconds(),
           " s");
}

DataParallel::~DataParallel() = default;

void DataParallel::check_world(int64_t batches_per_epoch, int64_t train_shard_count) {
  if (world() == 1) return;
  try {
    check_world_consistency(*comm_, batches_per_epoch, train_shard_count);
  } catch (const ConfigError&) {
    agreed_failure_ = true;  // every rank saw the same gathered values and throws the same error
    throw;
  }
}

void DataParallel::sync_start(const graph::Graph& g, int64_t start_step) {
  if (world() == 1) return;
  std::vector<std::string> variables;  // names and shapes: a different model is named, not MPI_ERR_TRUNCATE
  for (const graph::NamedTensor& v : g.variables()) variables.push_back(str(v.name, " ", checkpoint::shape_string(v.value.shape())));
  agreed([&] { check_model_consistency(*comm_, variables); });
  const int64_t mine = start_step;
  std::vector<int64_t> all(static_cast<size_t>(world()));
  comm_->allgather(std::span<const int64_t>(&mine, 1), std::span<int64_t>(all));
  for (int r = 1; r < world(); ++r) {
    if (all[static_cast<size_t>(r)] == all[0]) continue;
    std::ostringstream os;
    for (int q = 0; q < world(); ++q) os << (q ? ", " : "") << "rank " << q << ": step " << all[static_cast<size_t>(q)];
    agreed_failure_ = true;
    throw ConfigError(str("ranks would start at different steps (", os.str(),
                          "); with --resume every rank must see the same run directory (put output_dir on a "
                          "file system shared by all machines)"));
  }
}

namespace {

class CommunicatorSum final : public ops::CrossReplicaSum {
 public:
  explicit CommunicatorSum(Communicator& comm) : comm_(comm) {}
  void sum(std::span<double> values) override { comm_.allreduce_sum(values); }

 private:
  Communicator& comm_;
};

}  // namespace

void DataParallel::sync_batch_norm(graph::Graph& graph) {
  if (world() == 1) return;
  replica_sum_ = std::make_unique<CommunicatorSum>(*comm_);
  graph.set_cross_replica_sum(replica_sum_.get());
  log_info("synchronised batch norm: batch statistics over all ", world(), " ranks");
}

namespace {

void pack_metrics(const StepResult& r, double wait, bool save_due, float* m) {
  m[0] = static_cast<float>(r.loss);
  m[1] = static_cast<float>(r.main_loss);
  m[2] = static_cast<float>(r.aux_loss);
  m[3] = static_cast<float>(r.correct);
  m[4] = static_cast<float>(r.correct_top5);
  m[5] = static_cast<float>(r.examples);
  m[6] = static_cast<float>(wait);
  m[7] = stop_requested() ? 1.0f : 0.0f;
  m[8] = save_due ? 1.0f : 0.0f;  // the chief's clock (save_checkpoints_secs)
}

// Averages; counts are small integers, exact in float, so mean x world rounds back to the sum.
void unpack_metrics(const float* m, double world, StepResult& r, double& wait) {
  r.loss = m[0];
  r.main_loss = m[1];
  r.aux_loss = m[2];
  r.correct = std::llround(m[3] * world);
  r.correct_top5 = std::llround(m[4] * world);
  r.examples = std::llround(m[5] * world);
  wait = m[6];
}

}  // namespace

void DataParallel::average_metrics(StepResult& r, double& wait) {
  if (world() == 1) {
    save_due_ = save_wanted_;
    return;
  }
  float m[kStepMetrics];
  pack_metrics(r, wait, chief() && save_wanted_, m);
  comm_->allreduce_average(std::span<float>(m, kStepMetrics));
  unpack_metrics(m, world(), r, wait);
  stop_ = m[7] > 0;
  save_due_ = m[8] > 0;
}

EvalResult DataParallel::evaluate(graph::Graph& g, const EvalBatchFn& evaluate_batch, const RunSetup& s,
                                  const JobConfig& c, bool collective, const EvalLogitsFn& logits) {
  // A collective (sharded-head) evaluation has no per-rank logits to count.
  if (world() == 1 || collective)
    return evaluate_dataset(g, evaluate_batch, make_eval_dataset(s, c, c.batch_size()), collective ? nullptr : logits);
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult local;
  if (std::optional<pipeline::Dataset> ds = make_eval_shard(s, c, c.batch_size(), rank(), world()))
    local = evaluate_dataset(g, evaluate_batch, *ds, logits);
  const auto n = static_cast<double>(local.num_examples);
  double sums[4] = {std::round(local.top1 * n), std::round(local.top5 * n), local.loss * n, n};
  comm_->allreduce_sum(std::span<double>(sums, 4));
  EvalResult r;
  r.num_examples = std::llround(sums[3]);
  if (r.num_examples > 0) {
    r.top1 = sums[0] / sums[3];
    r.top5 = sums[1] / sums[3];
    r.loss = sums[2] / sums[3];
  }
  if (logits) {  // the ranks' confusion matrices: agree on the class count, then sum
    // Every rank takes the same branch: the decision uses only the summed values. The class counts
    // agree when (sum C)² = ranks × sum C² (equality of the mean square and the squared mean).
    const bool has = local.confusion_classes > 0;
    const double cc = has ? static_cast<double>(local.confusion_classes) : 0;
    double info[4] = {!has && local.num_examples > 0 ? 1.0 : 0.0, cc, has ? 1.0 : 0.0, cc * cc};
    comm_->allreduce_sum(std::span<double>(info, 4));
    const int64_t classes = info[2] > 0 ? std::llround(info[1] / info[2]) : 0;
    if (info[0] == 0 && classes > 0 && info[1] * info[1] == info[2] * info[3]) {
      std::vector<double> m(static_cast<size_t>(classes * classes), 0);
      for (size_t i = 0; i < local.confusion.size(); ++i) m[i] = static_cast<double>(local.confusion[i]);
      comm_->allreduce_sum(std::span<double>(m));
      r.confusion_classes = classes;
      r.confusion.resize(m.size());
      for (size_t i = 0; i < m.size(); ++i) r.confusion[i] = std::llround(m[i]);
    }
  }
  if (logits) r.misclassified = gather_misclassified(local.misclassified, s.eval_files);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Every rank's most confident mistakes, merged: each rank writes its own slots of a zeroed table (the
// file as its index in the split's list, plus one so that 0 is an empty slot) and a sum gathers them.
std::vector<MisclassifiedImage> DataParallel::gather_misclassified(const std::vector<MisclassifiedImage>& local,
                                                                   const pipeline::FileList& files) {
  constexpr size_t kFields = 6;
  std::vector<double> table(static_cast<size_t>(world()) * kMaxMisclassified * kFields, 0);
  double* mine = table.data() + static_cast<size_t>(rank()) * kMaxMisclassified * kFields;
  for (size_t i = 0; i < local.size() && i < kMaxMisclassified; ++i) {
    const MisclassifiedImage& m = local[i];
    size_t f = 0;
    while (f < files.files.size() && misclassified_file(files.files[f].path) != m.file) ++f;
    if (f == files.files.size()) continue;  // not a file of the split (cannot happen: the shards are its files)
    const double row[kFields] = {static_cast<double>(f + 1), static_cast<double>(m.record), static_cast<double>(m.offset),
                                 static_cast<double>(m.label), static_cast<double>(m.predicted), m.confidence};
    std::copy(row, row + kFields, mine + i * kFields);
  }
  comm_->allreduce_sum(std::span<double>(table));
  std::vector<MisclassifiedImage> all;
  for (size_t at = 0; at < table.size(); at += kFields) {
    const double* row = table.data() + at;
    if (row[0] < 1) continue;
    all.push_back({.file = misclassified_file(files.files[static_cast<size_t>(row[0]) - 1].path),
                   .record = static_cast<uint64_t>(row[1]),
                   .offset = static_cast<uint64_t>(row[2]),
                   .label = static_cast<int64_t>(row[3]),
                   .predicted = static_cast<int64_t>(row[4]),
                   .confidence = row[5]});
  }
  keep_most_confident(&all);
  return all;
}

bool DataParallel::stop_requested() const { return world() == 1 ? loop::stop_requested() : stop_; }

template <typename F>
void DataParallel::agreed(F&& check) {
  try {
    check();
  } catch (const ConfigError&) {
    agreed_failure_ = true;  // every rank saw the same gathered values and throws the same error
    throw;
  }
}

void DataParallel::fail(const std::exception& e) noexcept {
  if (world() == 1 || agreed_failure_) return;  // agreed: every rank throws it and exits cleanly
  log_error("rank ", rank(), "/", world(), ": ", e.what(),
            "; aborting the job so that the other ranks do not wait for this one");
  comm_->abort(1);
}

}  // namespace fastnn::loop
