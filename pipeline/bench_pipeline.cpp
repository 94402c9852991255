#include "pipeline/bench_pipeline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/manifest.h"
#include "core/tfrecord.h"
#include "pipeline/dataset.h"
#include "pipeline/preprocess.h"

namespace fastnn::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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
  for (const auto& e : std::filesystem::directory_iterator(data)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !name.ends_with(".tfrecord")) continue;
    any.push_back(e.path().string());
    if (name.rfind(split + "-", 0) == 0) named.push_back(e.path().string());
  }
  std::vector<std::string>& use = named.empty() ? any : named;
  if (use.empty()) throw ConfigError(str(data, ": no manifest.json and no .tfrecord files"));
  std::sort(use.begin(), use.end());
  return file_list_from_paths(use);
}

}  // namespace

PipelineBenchResult run_pipeline_bench(const PipelineBenchOptions& o) {
  if (o.steps < 2) throw ConfigError("bench: --steps must be >= 2");
  if (o.threads < 1) throw ConfigError("bench: --threads must be >= 1");
  FileList list = bench_files(o.data, o.split);
  std::vector<std::string> paths;
  std::vector<int64_t> counts;
  for (const auto& f : list.files) {
    paths.push_back(f.path);
    counts.push_back(f.records);
  }
  if (!list.counts_known()) counts.clear();

  PipelineBenchResult r;
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

  PipelineStats st;
  {
    auto it = ds.make_iterator();
    BatchHandle b;
    for (int i = 0; i < o.warmup_steps; ++i)
      if (!it->next(&b)) throw Error("bench: the pipeline ended during warm-up");
    // Count what the workers produce while the caller takes `steps` batches: batches already
    // waiting when the clock starts (up to prefetch of them) must not count as speed.
    uint64_t produced0 = it->stats().workers.samples;
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < o.steps; ++i)
      if (!it->next(&b)) throw Error("bench: the pipeline ended");
    r.seconds = seconds_since(t0);
    st = it->stats();
    r.images = st.workers.samples - produced0;
    b.reset();
  }
  r.images_per_sec = r.images / r.seconds;
  double bytes_per_image = st.workers.samples ? double(st.workers.bytes) / st.workers.samples : 0;
  r.mb_per_sec = r.images_per_sec * bytes_per_image / 1e6;
  double busy = double(st.read_ns + st.workers.parse_ns + st.workers.decode_ns + st.workers.augment_ns);
  if (busy > 0) {
    r.share_read = st.read_ns / busy;
    r.share_parse = st.workers.parse_ns / busy;
    r.share_decode = st.workers.decode_ns / busy;
    r.share_augment = st.workers.augment_ns / busy;
  }
  uint64_t total_batches = st.batches;
  double total_wait_s = st.consumer_wait_ns / 1e9;
  // Wait share over the timed part, approximated from the whole run's average per batch.
  r.consumer_wait_share = total_batches ? std::min(1.0, total_wait_s * o.steps / total_batches / r.seconds) : 0;
  r.buffers_allocated = st.buffers_allocated;
  r.pool_capacity = st.pool_capacity;

  if (o.ceiling) {
    uint64_t want = o.ceiling_images > 0 ? static_cast<uint64_t>(o.ceiling_images)
                                         : std::max<uint64_t>(uint64_t(o.steps) * o.batch_size / o.threads, 64);
    auto bare = make_preprocessor(o.preprocess);
    bare->prepare(1);
    // One batch buffer, filled slot by slot and reused: the output goes to memory as in the
    // pipeline. (A single reused slot would stay in cache and flatter the ceiling: 224x224x3 float
    // samples cost ~17% more when written to a batch than to one hot slot on a 2-core EPYC VM; see
    // bench_pipeline_kernels batch:0 vs batch:1.)
    const size_t sample_bytes = bare->spec().sample_bytes();
    std::vector<unsigned char> batch(sample_bytes * static_cast<size_t>(o.batch_size));
    StageTimes times;
    uint64_t n = 0;
    Clock::time_point t0 = Clock::now();
    while (n < want) {
      const uint64_t pass_start = n;
      for (const auto& f : list.files) {
        TFRecordReaderOptions ro;
        ro.compression = list.compression_known ? list.compression : detect_compression(f.path);
        ro.verify_data_crc = o.verify_data_crc;
        TFRecordReader reader(f.path, ro);
        std::string_view rec;
        while (n < want && reader.next(&rec)) {
          SampleContext ctx;
          ctx.seed = o.seed;
          ctx.index = n;
          ctx.times = &times;
          int32_t label;
          bare->map(rec, ctx, batch.data() + sample_bytes * (n % static_cast<uint64_t>(o.batch_size)), &label);
          ++n;
        }
        if (n >= want) break;
      }
      if (n == pass_start) throw Error(str("bench: ", list.name, " holds no records"));
    }
    double s = seconds_since(t0);
    r.ceiling_images = n;
    r.ceiling_single_images_per_sec = n / s;
    r.ceiling_images_per_sec = r.ceiling_single_images_per_sec * o.threads;
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
      {"sample", r.sample},
      {"batch_size", o.batch_size},
      {"threads", o.threads},
      {"steps", o.steps},
      {"shuffle_buffer", o.shuffle_buffer},
      {"prefetch", o.prefetch},
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
  };
  if (o.ceiling) {
    j["ceiling_single_thread_images_per_sec"] = r.ceiling_single_images_per_sec;
    j["ceiling_images_per_sec"] = r.ceiling_images_per_sec;
    j["ceiling_images"] = r.ceiling_images;
    j["fraction_of_ceiling"] = r.images_per_sec / r.ceiling_images_per_sec;
  }
  return j;
}

}  // namespace fastnn::pipeline
