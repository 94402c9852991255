#include "pipeline/dataset.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/checked_math.h"
#include "pipeline/resources.h"
#include "pipeline/batch_iterator_config.h"

namespace fastnn::pipeline {
namespace {

enum Stage { kShard = 1, kInterleave, kCache, kBalanceClasses, kShuffle, kRepeat, kMapAndBatch, kPrefetch };

class FunctionMapper final : public SampleMapper {
 public:
  FunctionMapper(BatchSpec spec, SampleFn fn) : spec_(spec), fn_(std::move(fn)) {}
  BatchSpec spec() const override { return spec_; }
  void prepare(int) override {}
  void map(std::string_view record, const SampleContext& ctx, void* slot, int32_t* label) override {
    fn_(record, ctx, slot, label);
  }

 private:
  BatchSpec spec_;
  SampleFn fn_;
};

// Epoch loop over a record stream: repeat().
class StreamRecordIterator final : public RecordIterator {
 public:
  StreamRecordIterator(std::shared_ptr<const FileList> files, std::unique_ptr<ReadCounters> counters,
                       std::unique_ptr<RecordStream> stream, int64_t epochs)
      : files_(std::move(files)), counters_(std::move(counters)), stream_(std::move(stream)), epochs_(epochs) {}

  bool next(RecordItem* item) override {
    for (;;) {
      if (!started_) {
        if (epochs_ >= 0 && epoch_ >= epochs_) return false;
        stream_->start_epoch(epoch_);
        started_ = true;
        index_ = 0;
      }
      if (stream_->next(&buf_, &item->source)) {
        item->bytes = buf_;
        item->epoch = epoch_;
        item->index = index_++;
        return true;
      }
      if (index_ == 0) return false;  // an empty epoch: repeating it would never end
      started_ = false;
      ++epoch_;
    }
  }
  const ReadCounters& counters() const override { return *counters_; }

 private:
  std::shared_ptr<const FileList> files_;
  std::unique_ptr<ReadCounters> counters_;
  std::unique_ptr<RecordStream> stream_;
  int64_t epochs_;
  int64_t epoch_ = 0;
  bool started_ = false;
  uint64_t index_ = 0;
  std::string buf_;
};

}  // namespace

std::shared_ptr<SampleMapper> make_function_mapper(BatchSpec spec, SampleFn fn) {
  return std::make_shared<FunctionMapper>(spec, std::move(fn));
}

Dataset Dataset::from_manifest(const std::string& dir, const std::string& split) {
  Dataset d;
  d.list_ = std::make_shared<FileList>(file_list_from_manifest(dir, split));
  return d;
}

Dataset Dataset::from_file_list(FileList list) {
  if (list.files.empty()) throw ConfigError(str("dataset: ", list.name, " has no files"));
  Dataset d;
  d.list_ = std::make_shared<FileList>(std::move(list));
  return d;
}

Dataset Dataset::from_files(std::vector<std::string> paths, std::vector<int64_t> record_counts) {
  Dataset d;
  d.list_ = std::make_shared<FileList>(file_list_from_paths(std::move(paths), std::move(record_counts)));
  return d;
}

void Dataset::order(int stage, const char* name) {
  static const char* kNames[] = {"",        "shard",  "interleave",    "cache",   "balance_classes",
                                 "shuffle", "repeat", "map_and_batch", "prefetch"};
  if (stage <= last_stage_)
    throw ConfigError(str("dataset: ", name, "() after ", kNames[last_stage_],
                          "(): stages go in tf.data's order shard, interleave, cache, balance_classes, shuffle, "
                          "repeat, map_and_batch, prefetch (each at most once)"));
  last_stage_ = stage;
}

Dataset& Dataset::shard(int rank, int world) {
  order(kShard, "shard");
  if (world < 1 || rank < 0 || rank >= world)
    throw ConfigError(str("shard(", rank, ", ", world, "): need 0 <= rank < world"));
  rank_ = rank;
  world_ = world;
  plan_.reset();
  return *this;
}

Dataset& Dataset::interleave(int cycle_length, int block_length) {
  order(kInterleave, "interleave");
  if (cycle_length < 1 || block_length < 1)
    throw ConfigError(str("interleave(", cycle_length, ", ", block_length, "): both must be >= 1"));
  reader_.cycle_length = cycle_length;
  reader_.block_length = block_length;
  return *this;
}

Dataset& Dataset::cache(std::string path) {
  order(kCache, "cache");
  cache_ = true;
  cache_path_ = std::move(path);
  return *this;
}

Dataset& Dataset::balance_classes(uint64_t seed, std::string label_key) {
  order(kBalanceClasses, "balance_classes");
  const ShardPlan& p = plan();
  if (p.mode == ShardMode::kByRecord)
    throw ConfigError(str("balance_classes: ", list_->name, " is divided over ", p.world, " ranks by record (",
                          list_->files.size(), " files do not divide into equal shares), so no rank knows its "
                          "class counts; convert with --num-gpus ", p.world, " (or a multiple of it)"));
  std::vector<uint64_t> counts;
  for (uint32_t f : p.files) {
    const std::vector<uint64_t>& h = list_->files[f].label_histogram;
    if (h.empty())
      throw ConfigError(str("balance_classes: ", list_->files[f].path, " comes without a class histogram; "
                            "class-balanced sampling needs the shards' manifest.json"));
    if (counts.size() < h.size()) counts.resize(h.size(), 0);
    for (size_t c = 0; c < h.size(); ++c) counts[c] = checked_add(counts[c], h[c], "class counts");
  }
  if (std::all_of(counts.begin(), counts.end(), [](uint64_t n) { return n == 0; }))
    throw ConfigError(str("balance_classes: the class histograms of ", list_->name, " count no record for this rank"));
  balance_counts_ = std::move(counts);
  balance_seed_ = seed;
  balance_label_key_ = std::move(label_key);
  return *this;
}

Dataset& Dataset::shuffle(size_t buffer_size, uint64_t seed, bool reshuffle_each_iteration) {
  order(kShuffle, "shuffle");
  if (buffer_size < 1) throw ConfigError("shuffle: buffer_size must be >= 1");
  shuffle_buffer_ = buffer_size;
  shuffle_seed_ = seed;
  reshuffle_ = reshuffle_each_iteration;
  return *this;
}

Dataset& Dataset::repeat(int64_t epochs) {
  order(kRepeat, "repeat");
  if (epochs < -1 || epochs == 0) throw ConfigError(str("repeat(", epochs, "): epochs must be >= 1, or -1 for ever"));
  epochs_ = epochs;
  return *this;
}

Dataset& Dataset::map_and_batch(std::shared_ptr<SampleMapper> fn, int batch_size, int num_parallel_batches,
                                bool drop_remainder) {
  order(kMapAndBatch, "map_and_batch");
  if (!fn) throw ConfigError("map_and_batch: no map function");
  if (batch_size < 1) throw ConfigError(str("map_and_batch: batch_size ", batch_size, " must be >= 1"));
  if (num_parallel_batches < 1)
    throw ConfigError(str("map_and_batch: num_parallel_batches ", num_parallel_batches, " must be >= 1"));
  BatchSpec spec = fn->spec();
  if (spec.height < 1 || spec.width < 1 || spec.channels < 1)
    throw ConfigError(str("map_and_batch: bad sample shape ", spec.describe()));
  mapper_ = std::move(fn);
  batch_size_ = batch_size;
  num_parallel_batches_ = num_parallel_batches;
  drop_remainder_ = drop_remainder;
  return *this;
}

Dataset& Dataset::prefetch(int buffer_batches) {
  order(kPrefetch, "prefetch");
  if (buffer_batches < 0) throw ConfigError(str("prefetch(", buffer_batches, "): must be >= 0"));
  prefetch_ = buffer_batches;
  return *this;
}

Dataset& Dataset::with_options(const DatasetOptions& options) {
  if (options.num_threads < 0) throw ConfigError("num_threads must be >= 0");
  if (options.max_held_batches < 1) throw ConfigError("max_held_batches must be >= 1");
  if (options.num_classes < 0) throw ConfigError(str("num_classes ", options.num_classes, " must be >= 0"));
  options_ = options;
  reader_.verify_data_crc = options.verify_data_crc;
  reader_.skip_corrupt = options.skip_corrupt;
  return *this;
}

void Dataset::ensure_plan() const {
  if (plan_) return;
  FASTNN_CHECK(list_ != nullptr, "dataset has no source (use from_manifest or from_files)");
  if (!list_->counts_known()) count_records(list_.get());
  plan_ = std::make_shared<const ShardPlan>(plan_shards(*list_, rank_, world_));
}

const ShardPlan& Dataset::plan() const {
  ensure_plan();
  return *plan_;
}

const FileList& Dataset::files() const { return *list_; }

int64_t Dataset::batches_per_epoch() const {
  if (!mapper_) throw ConfigError("batches_per_epoch: the dataset has no map_and_batch");
  const uint64_t n = records_per_epoch();
  const uint64_t b = static_cast<uint64_t>(batch_size_);
  return checked_int64(n / b + (!drop_remainder_ && n % b != 0 ? 1 : 0), str(list_->name, ": batches per epoch"));
}

int64_t Dataset::total_batches(int64_t epochs) const {
  if (epochs < 1) throw ConfigError(str("total_batches: epochs ", epochs, " must be >= 1"));
  return checked_mul(batches_per_epoch(), epochs, str(list_->name, ": batches per epoch × epochs"));
}

std::unique_ptr<RecordStream> Dataset::build_stream(ReadCounters* counters) const {
  const ShardPlan& p = plan();
  std::unique_ptr<RecordStream> s = make_interleave_reader(*list_, p.files, reader_, counters);
  if (p.mode == ShardMode::kByRecord)
    s = make_record_shard_filter(std::move(s), p.rank, p.world, p.records_per_rank * p.world);
  if (cache_) {
    nlohmann::json fp = {{"fastnn_cache", 1}, {"rank", p.rank}, {"world", p.world},
                         {"mode", shard_mode_name(p.mode)}, {"records", p.records_per_rank}};
    for (uint32_t f : p.files) fp["files"].push_back(list_->files[f].path);
    s = make_cache_stage(std::move(s), cache_path_, fp.dump(), counters);
  }
  if (!balance_counts_.empty())
    s = make_class_balance_stage(std::move(s), balance_counts_, balance_label_key_, balance_seed_, list_);
  if (shuffle_buffer_ > 0) s = make_shuffle_stage(std::move(s), shuffle_buffer_, shuffle_seed_, reshuffle_);
  return s;
}

void Dataset::check_resources() const {
  PipelineResources r;
  r.threads = options_.num_threads;
  r.num_parallel_batches = num_parallel_batches_;
  r.prefetch = prefetch_;
  r.held_batches = options_.max_held_batches;
  r.shuffle_buffer = shuffle_buffer_;
  if (mapper_) r.batch_bytes = static_cast<uint64_t>(mapper_->spec().sample_bytes()) * static_cast<uint64_t>(batch_size_);
  const uint64_t records = list_->counts_known() ? list_->total_records() : 0;
  if (list_->total_bytes > 0 && records > 0) r.record_bytes = list_->total_bytes / records;
  check_pipeline_resources(r);
}

std::unique_ptr<RecordIterator> Dataset::make_record_iterator() const {
  check_resources();
  auto counters = std::make_unique<ReadCounters>();
  auto stream = build_stream(counters.get());
  return std::make_unique<StreamRecordIterator>(list_, std::move(counters), std::move(stream), epochs_);
}

std::unique_ptr<BatchIterator> Dataset::make_iterator(uint64_t first_batch) const {
  if (!mapper_) throw ConfigError("make_iterator: the dataset has no map_and_batch stage");
  check_resources();
  int64_t per_epoch = batches_per_epoch();
  if (per_epoch == 0)
    throw ConfigError(str(list_->name, ": ", records_per_epoch(), " records per epoch on this rank give no batch of ",
                          batch_size_, drop_remainder_ ? " (drop_remainder)" : ""));
  BatchIterator::Config c;
  c.files = list_;
  c.counters = std::make_unique<ReadCounters>();
  c.stream = build_stream(c.counters.get());
  c.mapper = mapper_;
  c.batch_size = batch_size_;
  c.num_parallel_batches = num_parallel_batches_;
  c.drop_remainder = drop_remainder_;
  c.prefetch = prefetch_;
  c.epochs = epochs_;
  c.batches_per_epoch = per_epoch;
  c.first_batch = first_batch;
  c.options = options_;
  if (c.options.num_classes == 0) c.options.num_classes = list_->num_classes;
  return std::make_unique<BatchIterator>(std::move(c));
}

}  // namespace fastnn::pipeline
