#include "pipeline/bench_pipeline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <time.h>

#include "core/check.h"
#include "core/clock.h"
#include "core/resources.h"
#include "core/manifest.h"
#include "core/tfrecord.h"
#include "pipeline/dataset.h"
#include "pipeline/preprocess.h"

namespace fastnn::pipeline {
namespace {

double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// The split's shards: the manifest's, else <data>/<split>-*.tfrecord, else every *.tfrecord.
FileList bench_files(const std::string& data, const std::string& split) {
  std::error_code ec;
  if (!std::filesystem::is_directory(data, ec)) throw ConfigError(str(data, ": not a folder"));
  if (std::filesystem::exists(std::filesystem::path(data) / kManifestFileName, ec))
    return file_list_from_manifest(data, split);
  std::vector<std::string> named, any;
  // error_code overloads throughout: a folder that cannot be listed is an IoError naming it, not an
  // "internal error" from std::filesystem_error.
  std::filesystem::directory_iterator it(data, ec), end;
  if (ec) throw IoError(str(data, ": cannot list folder: ", ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw IoError(str(data, ": cannot list folder: ", ec.message()));
    const auto& e = *it;
    std::string name = e.path().filename().string();
    std::error_code fec;
    if (!e.is_regular_file(fec) || !name.ends_with(".tfrecord")) continue;
    any.push_back(e.path().string());
    if (name.rfind(split + "-", 0) == 0) named.push_back(e.path().string());
  }
  std::vector<std::string>& use = named.empty() ? any : named;
  if (use.empty()) throw ConfigError(str(data, ": no manifest.json and no .tfrecord files"));
  std::sort(use.begin(), use.end());
  return file_list_from_paths(use);
}

// The ceiling's loop: TFRecordReader → the preset function into the slots of one reused batch
// buffer, continuing through the files (and around) across calls.
class BareLoop {
 public:
  BareLoop(const FileList& list, const PipelineBenchOptions& o) : list_(list), o_(o) {
    mapper_ = make_preprocessor(o.preprocess);
    mapper_->prepare(1);
    // One batch buffer, filled slot by slot and reused: the output goes to memory as in the
    // pipeline. (A single reused slot would stay in cache and flatter the ceiling: 224x224x3 float
    // samples cost ~17% more when written to a batch than to one hot slot on a 2-core EPYC VM; see
    // bench_pipeline_kernels batch:0 vs batch:1.)
    sample_bytes_ = mapper_->spec().sample_bytes();
    batch_.resize(sample_bytes_ * static_cast<size_t>(o.batch_size));
  }

  const StageTimes& times() const { return times_; }  // over every record mapped so far
  uint64_t mapped() const { return count_; }

  // Maps n more records; returns the seconds it took and adds this thread's CPU seconds to *cpu.
  double run(uint64_t n, double* cpu = nullptr) {
    Clock::time_point t0 = Clock::now();
    double c0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    uint64_t done = 0, since_open = 0;
    while (done < n) {
      if (!reader_) {
        const ShardFile& f = list_.files[file_];
        TFRecordReaderOptions ro;
        ro.compression = list_.compression_known ? list_.compression : detect_compression(f.path);
        ro.verify_data_crc = o_.verify_data_crc;
        reader_ = std::make_unique<TFRecordReader>(f.path, ro);
      }
      std::string_view rec;
      if (!reader_->next(&rec)) {
        reader_.reset();
        file_ = (file_ + 1) % list_.files.size();
        if (file_ == 0 && since_open == 0) throw Error(str("bench: ", list_.name, " holds no records"));
        if (file_ == 0) since_open = 0;
        continue;
      }
      SampleContext ctx;
      ctx.seed = o_.seed;
      ctx.index = count_;
      ctx.times = &times_;
      int32_t label;
      mapper_->map(rec, ctx, batch_.data() + sample_bytes_ * (count_ % static_cast<uint64_t>(o_.batch_size)), &label);
      ++count_;
      ++done;
      ++since_open;
    }
    if (cpu) *cpu += cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  const FileList& list_;
  const PipelineBenchOptions& o_;
  std::shared_ptr<SampleMapper> mapper_;
  size_t sample_bytes_ = 0;
  std::vector<unsigned char> batch_;
  std::unique_ptr<TFRecordReader> reader_;
  size_t file_ = 0;
  uint64_t count_ = 0;
  StageTimes times_;
};

}  // namespace

PipelineBenchResult run_pipeline_bench(const PipelineBenchOptions& o) {
  if (o.steps < 2) throw ConfigError("bench: --steps must be >= 2");
  if (o.threads < 1) throw ConfigError("bench: --threads must be >= 1");
  if (o.rounds < 1) throw ConfigError("bench: --rounds must be >= 1");
  check_thread_count(o.threads, "--threads");
  const int rounds = std::min(o.rounds, o.steps);
  PipelineBenchResult r;
  r.rounds = rounds;
  FileList list = bench_files(o.data, o.split);
  std::vector<std::string> paths;
  std::vector<int64_t> counts;
  for (const auto& f : list.files) {
    paths.push_back(f.path);
    counts.push_back(f.records);
  }
  if (!list.counts_known()) counts.clear();

  auto mapper = make_preprocessor(o.preprocess);
  r.sample = mapper->spec().describe();
  Dataset ds = Dataset::from_files(paths, counts);
  ds.interleave(std::max(1, o.cycle_length), 1);
  if (o.cache) ds.cache();
  if (o.shuffle_buffer > 0) ds.shuffle(o.shuffle_buffer, o.seed);
  ds.repeat(-1).map_and_batch(mapper, o.batch_size, o.num_parallel_batches, true).prefetch(o.prefetch);
  DatasetOptions opt;
  opt.num_threads = o.threads;
  opt.deterministic = o.deterministic;
  opt.verify_data_crc = o.verify_data_crc;
  opt.seed = o.seed;
  ds.with_options(opt);
  r.records_per_epoch = ds.records_per_epoch();

  // Pipeline and ceiling take turns, `rounds` times, so that a slow minute of a shared machine
  // slows both rather than one. While the ceiling runs, the pipeline fills its pool and idles.
  std::unique_ptr<BareLoop> bare;
  if (o.ceiling) bare = std::make_unique<BareLoop>(list, o);
  // The parallel ceiling: `threads` bare loops side by side, each on its own thread and buffer.
  std::vector<std::unique_ptr<BareLoop>> side;
  if (o.ceiling && o.parallel_ceiling)
    for (int t = 0; t < o.threads; ++t) side.push_back(std::make_unique<BareLoop>(list, o));
  double parallel_seconds = 0;
  uint64_t parallel_images = 0;
  const uint64_t ceiling_total = o.ceiling_images > 0 ? static_cast<uint64_t>(o.ceiling_images)
                                                      : std::max<uint64_t>(uint64_t(o.steps) * o.batch_size / o.threads, 64);
  double ceiling_seconds = 0, ceiling_cpu = 0, pipeline_cpu = 0;
  uint64_t consumer_wait_ns = 0;
  PipelineStats st;
  {
    auto it = ds.make_iterator();
    BatchHandle b;
    for (int i = 0; i < o.warmup_steps; ++i)
      if (!it->next(&b)) throw Error("bench: the pipeline ended during warm-up");
    if (bare) bare->run(std::min<uint64_t>(ceiling_total, 16));  // its warm-up: first allocations
    for (auto& l : side) l->run(std::min<uint64_t>(ceiling_total, 16));
    int steps_done = 0;
    for (int round = 0; round < rounds; ++round) {
      // Count what the workers produce while the caller takes its batches: batches already waiting
      // when the clock starts (up to prefetch of them) must not count as speed.
      int steps = (o.steps * (round + 1)) / rounds - steps_done;
      const PipelineStats s0 = it->stats();
      const uint64_t produced0 = s0.workers.samples;
      Clock::time_point t0 = Clock::now();
      double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
      // Take batches until the workers have produced `steps` batches' worth while the clock ran: a
      // turn that starts with a full pool (after a ceiling turn) must not end on prefetched batches
      // alone, or a short turn would time nothing but the backlog.
      const uint64_t target = static_cast<uint64_t>(steps) * static_cast<uint64_t>(o.batch_size);
      while (it->stats().workers.samples - produced0 < target) {
        if (!it->next(&b)) throw Error("bench: the pipeline ended");
        if (o.consume_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.consume_ms));
      }
      r.seconds += seconds_since(t0);
      pipeline_cpu += cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
      consumer_wait_ns += it->stats().consumer_wait_ns - s0.consumer_wait_ns;
      r.images += it->stats().workers.samples - produced0;
      steps_done += steps;
      if (bare) {
        // The pipeline goes on until its pool is full; the ceiling must not share the CPU with
        // that, so wait until the workers have stopped (30 quiet ms; at most a minute).
        Clock::time_point idle0 = Clock::now();
        for (int still = 0; still < 3 && seconds_since(idle0) < 60;) {
          uint64_t before = it->stats().workers.samples;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          still = it->stats().workers.samples == before ? still + 1 : 0;
        }
        uint64_t n = (ceiling_total * (round + 1)) / rounds - r.ceiling_images;
        ceiling_seconds += bare->run(n, &ceiling_cpu);
        r.ceiling_images += n;
        if (!side.empty()) {
          Clock::time_point p0 = Clock::now();
          std::vector<std::thread> ts;
          for (auto& l : side) ts.emplace_back([&l, n] { l->run(n); });
          for (auto& t : ts) t.join();
          parallel_seconds += seconds_since(p0);
          parallel_images += n * side.size();
        }
      }
    }
    st = it->stats();
    b.reset();
  }
  r.images_per_sec = r.images / r.seconds;
  r.cpu_cores = pipeline_cpu / r.seconds;
  r.images_per_cpu_sec = pipeline_cpu > 0 ? r.images / pipeline_cpu : 0;
  double bytes_per_image = st.workers.samples ? double(st.workers.bytes) / st.workers.samples : 0;
  r.mb_per_sec = r.images_per_sec * bytes_per_image / 1e6;
  double busy = double(st.read_ns + st.workers.parse_ns + st.workers.decode_ns + st.workers.augment_ns);
  if (busy > 0) {
    r.share_read = st.read_ns / busy;
    r.share_parse = st.workers.parse_ns / busy;
    r.share_decode = st.workers.decode_ns / busy;
    r.share_augment = st.workers.augment_ns / busy;
  }
  // The caller's waiting over the timed turns.
  r.consumer_wait_share = r.seconds > 0 ? std::min(1.0, consumer_wait_ns / 1e9 / r.seconds) : 0;
  r.buffers_allocated = st.buffers_allocated;
  r.pool_capacity = st.pool_capacity;
  if (st.workers.samples > 0)
    r.map_us_per_image = double(st.workers.parse_ns + st.workers.decode_ns + st.workers.augment_ns) / 1e3 /
                         double(st.workers.samples);
  if (bare && bare->mapped() > 0) {
    const StageTimes& t = bare->times();
    r.ceiling_map_us_per_image = double(t.parse_ns + t.decode_ns + t.augment_ns) / 1e3 / double(bare->mapped());
  }
  if (bare) {
    r.ceiling_single_images_per_sec = r.ceiling_images / ceiling_seconds;
    r.ceiling_images_per_sec = r.ceiling_single_images_per_sec * o.threads;
    r.ceiling_cpu_cores = ceiling_cpu / ceiling_seconds;
    if (parallel_seconds > 0) r.parallel_ceiling_images_per_sec = parallel_images / parallel_seconds;
    r.ceiling_images_per_cpu_sec = ceiling_cpu > 0 ? r.ceiling_images / ceiling_cpu : 0;
  }
  r.peak_rss_mb = peak_rss_mb();
  return r;
}

nlohmann::json bench_json(const PipelineBenchOptions& o, const PipelineBenchResult& r) {
  nlohmann::json j = {
      {"benchmark", "pipeline"},
      {"data", o.data},
      {"split", o.split},
      {"preset", o.preprocess.preset},
      {"train", o.preprocess.train},
      {"auto_augment", o.preprocess.train ? auto_augment_name(o.preprocess.auto_augment.policy) : ""},
      {"sample", r.sample},
      {"batch_size", o.batch_size},
      {"threads", o.threads},
      {"steps", o.steps},
      {"rounds", r.rounds},
      {"shuffle_buffer", o.shuffle_buffer},
      {"prefetch", o.prefetch},
      {"consume_ms", o.consume_ms},
      {"num_parallel_batches", o.num_parallel_batches},
      {"cache", o.cache},
      {"crop_decode", o.preprocess.crop_decode},
      {"dct_scale", o.preprocess.dct_scale},
      {"records_per_epoch", r.records_per_epoch},
      {"images", r.images},
      {"seconds", r.seconds},
      {"images_per_sec", r.images_per_sec},
      {"mb_per_sec", r.mb_per_sec},
      {"stage_share", {{"read", r.share_read}, {"parse", r.share_parse}, {"decode", r.share_decode},
                       {"augment", r.share_augment}}},
      {"consumer_wait_share", r.consumer_wait_share},
      {"buffers_allocated", r.buffers_allocated},
      {"pool_capacity", r.pool_capacity},
      {"peak_rss_mb", r.peak_rss_mb},
      {"cpu_cores", r.cpu_cores},
      {"images_per_cpu_sec", r.images_per_cpu_sec},
      {"map_us_per_image", r.map_us_per_image},
  };
  if (o.ceiling) {
    j["ceiling_single_thread_images_per_sec"] = r.ceiling_single_images_per_sec;
    j["ceiling_images_per_sec"] = r.ceiling_images_per_sec;
    j["ceiling_images"] = r.ceiling_images;
    j["fraction_of_ceiling"] = r.images_per_sec / r.ceiling_images_per_sec;
    j["ceiling_cpu_cores"] = r.ceiling_cpu_cores;
    j["ceiling_images_per_cpu_sec"] = r.ceiling_images_per_cpu_sec;
    j["ceiling_map_us_per_image"] = r.ceiling_map_us_per_image;
    j["cpu_efficiency"] = r.images_per_cpu_sec / r.ceiling_images_per_cpu_sec;
    if (o.parallel_ceiling) {
      j["parallel_ceiling_images_per_sec"] = r.parallel_ceiling_images_per_sec;
      j["fraction_of_parallel_ceiling"] = r.images_per_sec / r.parallel_ceiling_images_per_sec;
    }
  }
  return j;
}

}  // namespace fastnn::pipeline
