#include "converters/convert.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <optional>

#include "converters/class_balance.h"
#include "converters/rank_group.h"
#include "converters/shard_writer.h"
#include "core/atomic_output.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/logging.h"
#include "core/progress.h"
#include "core/resources.h"

namespace fastnn::converters {
namespace {


void write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw_io_error(path, "create");
  size_t n = std::fwrite(text.data(), 1, text.size(), f);
  bool ok = n == text.size() && std::fflush(f) == 0;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) throw_io_error(path, "write");
}

// "train" → "train" + "validation" (image-folder's --validation-fraction / --validation-count).
void hold_out_validation(DatasetIndex& index, const ConvertOptions& o) {
  if (o.validation_fraction == 0 && o.validation_count == 0) return;
  SplitIndex* train = nullptr;
  for (SplitIndex& s : index.splits)
    if (s.name == "train") train = &s;
  if (!train) throw ConfigError("a validation hold-out needs a train split");
  for (const SplitIndex& s : index.splits)
    if (s.name == "validation") throw ConfigError("the input already has a validation split");
  const uint64_t n = train->samples.size();
  uint64_t count = o.validation_count;
  if (o.validation_fraction > 0) count = static_cast<uint64_t>(std::llround(o.validation_fraction * static_cast<double>(n)));
  if (count == 0 || count >= n)
    throw ConfigError(str("the validation hold-out would take ", count, " of the ", n,
                          " train samples; it must leave both splits non-empty"));
  std::vector<int32_t> labels(n);
  for (uint64_t i = 0; i < n; ++i) labels[i] = train->samples[i].label;
  std::vector<bool> held =
      choose_holdout(labels, static_cast<int64_t>(index.class_names.size()), count, !o.random_holdout, o.seed);
  SplitIndex val;
  val.name = "validation";
  std::vector<SampleRef> keep;
  keep.reserve(n - count);
  val.samples.reserve(count);
  for (uint64_t i = 0; i < n; ++i) (held[i] ? val.samples : keep).push_back(train->samples[i]);
  train->samples = std::move(keep);
  index.splits.push_back(std::move(val));
}

// Classes without a record in a split, a split whose classes are far apart in size, and an output
// without a held-out split: said when the conversion ends, not found by a model that learns nothing.
std::vector<std::string> output_warnings(const Manifest& m, const std::string& holdout_hint) {
  std::vector<std::string> out;
  for (const SplitInfo& s : m.splits)
    for (std::string& w : class_balance_warnings(s.name, class_balance(s.label_histogram), m.class_names,
                                                 kDefaultMaxClassRatio))
      out.push_back(std::move(w));
  if (m.splits.size() == 1 && m.splits[0].name == "train")
    out.push_back(str("no held-out split: every sample is in train, so training will report no held-out accuracy",
                      holdout_hint.empty() ? "" : "; ", holdout_hint));
  return out;
}

}  // namespace

void validate_convert_options(const ConvertOptions& o) {
  if (o.output.empty()) throw ConfigError("--output is required");
  if (o.num_gpus < 1 || o.num_gpus > 65536) throw ConfigError(str("--num-gpus must be in 1..65536, not ", o.num_gpus));
  if (o.shards_per_gpu < 1 || o.shards_per_gpu > 65536)
    throw ConfigError(str("--shards-per-gpu must be in 1..65536, not ", o.shards_per_gpu));
  if (o.num_gpus * o.shards_per_gpu > kMaxShards)
    throw ConfigError(str("--num-gpus × --shards-per-gpu must be at most ", kMaxShards));
  check_thread_count(o.threads, "--threads");
  if (!(o.validation_fraction >= 0 && o.validation_fraction < 1))
    throw ConfigError("--validation-fraction must be in [0, 1)");
  if (o.validation_fraction > 0 && o.validation_count > 0)
    throw ConfigError("give --validation-fraction or --validation-count, not both");
}

namespace {

// The manifest, from the plans (labels) and the outcomes (sizes, image geometry), jobs in split-major
// order.
Manifest build_manifest(const Source& source, const DatasetIndex& index, const std::vector<ShardPlan>& plans,
                        const std::vector<ShardJob>& jobs, const std::vector<ShardOutcome>& outcomes,
                        const ConvertOptions& o, ConvertResult& result) {
  const int64_t num_classes = static_cast<int64_t>(index.class_names.size());
  const int64_t num_shards = o.num_gpus * o.shards_per_gpu;
  Manifest m;
  m.dataset = index.dataset;
  m.created_by = o.created_by;
  m.inputs = o.inputs;
  m.class_names = index.class_names;
  m.coarse_class_names = index.coarse_class_names;
  m.class_names_source = o.class_names_source.empty() ? index.class_names_source : o.class_names_source;
  m.seed = o.seed;
  m.num_gpus = o.num_gpus;
  m.shards_per_gpu = o.shards_per_gpu;
  m.compression = compression_name(o.compression);
  m.remainder = remainder_name(o.remainder);
  m.stratified = o.stratify;
  ImageSummary image;
  size_t job = 0;
  for (size_t si = 0; si < index.splits.size(); ++si) {
    const SplitIndex& s = index.splits[si];
    SplitInfo info;
    info.name = s.name;
    info.num_source_samples = s.samples.size();
    info.equal_shards = s.equal_shards;
    info.label_histogram.assign(num_classes, 0);
    for (int64_t k = 0; k < num_shards; ++k, ++job) {
      ShardInfo sh;
      sh.file = jobs[job].name;
      sh.records = outcomes[job].records;
      sh.bytes = outcomes[job].file_bytes;
      sh.label_histogram.assign(num_classes, 0);
      for (uint32_t i : plans[si].shards[k]) ++sh.label_histogram[s.samples[i].label];
      for (int64_t c = 0; c < num_classes; ++c) info.label_histogram[c] += sh.label_histogram[c];
      info.num_records += sh.records;
      result.bytes_written += sh.bytes;
      image.merge(outcomes[job].image);
      info.shards.push_back(std::move(sh));
    }
    for (uint32_t i : plans[si].dropped)
      info.dropped.push_back({source.describe(index, s.samples[i]), s.samples[i].label});
    for (const ShardPlan::Pad& p : plans[si].padded)
      info.padded.push_back({source.describe(index, s.samples[p.sample]), s.samples[p.sample].label, p.shard});
    info.skipped = s.skipped;
    info.ignored_files = s.ignored_files;
    info.ignored.assign(s.ignored.begin(), s.ignored.begin() + static_cast<std::ptrdiff_t>(
                                                                   std::min(s.ignored.size(), kMaxIgnoredListed)));
    result.ignored.insert(result.ignored.end(), s.ignored.begin(), s.ignored.end());
    m.splits.push_back(std::move(info));
  }
  m.image.format = image.format;
  m.image.height = image.height;
  m.image.width = image.width;
  m.image.channels = image.channels;
  return m;
}

// One shard plan per split.
std::vector<ShardPlan> plan_splits(const DatasetIndex& index, const ConvertOptions& o) {
  std::vector<ShardPlan> plans;
  for (const SplitIndex& s : index.splits) {
    validate_split_name(s.name);
    std::vector<int32_t> labels(s.samples.size());
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = s.samples[i].label;
    PlanOptions po;
    po.split = s.name;
    po.num_shards = o.num_gpus * o.shards_per_gpu;
    po.equal_shards = s.equal_shards;
    po.remainder = o.remainder;
    po.stratify = o.stratify;
    po.seed = o.seed;
    po.num_classes = static_cast<int64_t>(index.class_names.size());
    plans.push_back(plan_shards(labels, po));
  }
  return plans;
}

}  // namespace

ConvertResult run_conversion(Source& source, const ConvertOptions& o) {
  validate_convert_options(o);
  RankGroup* group = o.group && o.group->size() > 1 ? o.group : nullptr;
  const int rank = group ? group->rank() : 0;
  const int ranks = group ? group->size() : 1;
  const auto t0 = Clock::now();
  ConvertResult result;
  result.output = o.output;
  result.rank = rank;
  result.ranks = ranks;
  const bool quiet = o.quiet || rank != 0;

  // Rank 0 owns the folder: the lock, the clean-up of an earlier run, the commit.
  OutputDir::Options out_opts;
  out_opts.marker = kManifestFileName;
  out_opts.owned = [](const std::string& n) { return n == kLabelsFileName || is_shard_file_name(n); };
  out_opts.overwrite = o.overwrite;
  out_opts.sync = o.sync;
  std::optional<OutputDir> out;
  run_step(group, [&] {
    if (rank == 0) out.emplace(o.output, out_opts);
  });
  if (out) result.cleaned_up = out->cleaned_up();
  if (group) check_shared_folder(*group, o.output);

  // Ranks on one machine share its cores: all of them for each rank would oversubscribe them local_size
  // times over. A rank mpirun bound to some cores sees only those (oneTBB follows the affinity mask).
  int threads = o.threads;
  if (group && threads == 0) {
    const int visible = tbb::this_task_arena::max_concurrency();
    threads = visible < static_cast<int>(MachineResources::detect().cores)
                  ? visible
                  : std::max(1, visible / std::max(1, group->local_size()));
  }
  // More threads than cores is allowed (the default soft limit would cap it and warn).
  std::optional<tbb::global_control> allow;
  if (threads > tbb::this_task_arena::max_concurrency())
    allow.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  tbb::task_arena arena(threads > 0 ? threads : tbb::task_arena::automatic);

  // Every rank scans and plans the same way; the plan must come out the same everywhere.
  DatasetIndex index;
  std::vector<ShardPlan> plans;
  run_step(group, [&] {
    ScanOptions scan_opts;
    scan_opts.skip_bad = o.skip_bad;
    scan_opts.quiet = quiet;
    scan_opts.group = group;
    index = arena.execute([&] { return source.scan(scan_opts); });
    const int64_t num_classes = static_cast<int64_t>(index.class_names.size());
    if (num_classes < 1 || num_classes > kMaxClasses) throw ConfigError(str("dataset has ", num_classes, " classes"));
    hold_out_validation(index, o);
    plans = plan_splits(index, o);
  });
  if (group) check_same_plan(*group, plan_fingerprint(index, plans));
  result.source_bytes = index.source_bytes;
  result.scan_seconds = seconds_since(t0);

  // One job per shard of every split.
  const int64_t num_shards = o.num_gpus * o.shards_per_gpu;
  std::vector<ShardJob> jobs;
  for (size_t si = 0; si < index.splits.size(); ++si) {
    for (int64_t k = 0; k < num_shards; ++k) {
      ShardJob job;
      job.split = &index.splits[si];
      job.samples = &plans[si].shards[k];
      job.name = shard_file_name(index.splits[si].name, k, num_shards);
      job.path = out ? out->temp_path(job.name) : o.output + "/" + OutputDir::temp_name(job.name);
      jobs.push_back(std::move(job));
    }
  }

  // Smallest split first: a source still loading a big split in the background (MNIST's inflate)
  // overlaps that with the small split's encoding. The bytes do not depend on the order. Under mpirun
  // the jobs in that order are dealt to the ranks round robin.
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[a].split->samples.size() < jobs[b].split->samples.size();
  });
  std::vector<size_t> mine;
  std::vector<ShardJob> my_jobs;
  uint64_t my_records = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (job_owner(i, ranks) != rank) continue;
    mine.push_back(order[i]);
    my_jobs.push_back(jobs[order[i]]);
    my_records += jobs[order[i]].samples->size();
  }

  const auto t1 = Clock::now();
  Progress progress(ranks > 1 ? str("convert (rank ", rank, " of ", ranks, ")") : std::string("convert"), my_records,
                    "records");
  progress.set_silent(quiet);
  std::vector<ShardOutcome> my_outcomes;
  try {
    my_outcomes = arena.execute([&] { return write_shards(source, index, my_jobs, o.compression, o.sync, &progress); });
    // Rank 0's commit syncs what it renames; the other ranks make their own files durable first.
    if (group && rank != 0 && o.sync)
      for (const ShardJob& job : my_jobs) fsync_path(job.path);
  } catch (const std::exception& e) {
    if (!group) throw;
    // The other ranks are busy writing, not waiting in a collective: end the whole job now. Nothing is
    // final-named yet; the temporaries go with the next run in this folder.
    log_error(str("rank ", rank, " of ", ranks, ": ", e.what()));
    std::fflush(stderr);
    out.reset();  // rank 0: its temporaries, as far as they are written
    group->abort(1);
  }
  progress.finish();
  result.records_written_here = my_records;
  result.write_seconds = seconds_since(t1);

  std::vector<ShardOutcome> outcomes(jobs.size());
  if (group) {
    outcomes = gather_outcomes(*group, encode_outcomes(mine, my_outcomes), jobs.size());
  } else {
    for (size_t i = 0; i < mine.size(); ++i) outcomes[mine[i]] = std::move(my_outcomes[i]);
  }
  result.manifest = build_manifest(source, index, plans, jobs, outcomes, o, result);

  run_step(group, [&] {
    if (!out) return;
    write_file(out->temp_path(kLabelsFileName), format_labels_txt(result.manifest.class_names));
    write_file(out->temp_path(kManifestFileName), serialize_manifest(result.manifest));
    out->commit();
  });
  result.warnings = output_warnings(result.manifest, o.holdout_hint);
  result.total_seconds = seconds_since(t0);
  return result;
}

}  // namespace fastnn::converters
