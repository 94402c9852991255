#include "converters/shard_check.h"

#include "converters/shard_check_internal.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <nlohmann/json.hpp>
#include <optional>

#include "converters/rank_group.h"
#include "core/atomic_output.h"
#include "core/check.h"
#include "core/resources.h"
#include "core/example.h"
#include "core/image.h"
#include "core/progress.h"
#include "core/tfrecord.h"

namespace fastnn::converters {
namespace {

constexpr size_t kChunkRecords = 64;

struct Chunk {
  uint64_t first_index = 0;
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  std::vector<int64_t> labels;       // -1: unusable
  std::vector<std::string> errors;   // "" = fine
  std::vector<RecordFacts> facts;    // views into `records`
};

struct Context {
  const Manifest* m;
  bool decode;
  bool coarse;
  ExampleParser parser{{keys::kImageEncoded, keys::kImageFormat, keys::kLabel, keys::kHeight, keys::kWidth,
                        keys::kChannels, keys::kCoarseLabel}};
};

// Checks one record; returns "" or the problem. *label is set when the label is usable.
std::string check_record(const Context& ctx, std::string_view rec, bool measure, std::vector<uint8_t>* pixels,
                         int64_t* label, RecordFacts* facts) {
  *label = -1;
  try {
    FeatureView f[7];
    ctx.parser.parse(rec, f);
    std::string_view encoded = f[0].single_bytes(keys::kImageEncoded);
    std::string_view format = f[1].single_bytes(keys::kImageFormat);
    int64_t l = f[2].single_int64(keys::kLabel);
    int64_t h = f[3].single_int64(keys::kHeight);
    int64_t w = f[4].single_int64(keys::kWidth);
    int64_t c = f[5].single_int64(keys::kChannels);
    if (l < 0 || l >= ctx.m->num_classes())
      return str("image/class/label ", l, " is outside 0..", ctx.m->num_classes() - 1);
    *label = l;
    if (ctx.coarse) {
      int64_t cl = f[6].single_int64(keys::kCoarseLabel);
      int64_t nc = static_cast<int64_t>(ctx.m->coarse_class_names.size());
      if (cl < 0 || cl >= nc) return str("image/class/coarse_label ", cl, " is outside 0..", nc - 1);
    }
    if (h <= 0 || w <= 0 || h > 65535 || w > 65535) return str("image/height × image/width ", h, "x", w, " is not a valid size");
    if (c != 1 && c != 3 && c != 4) return str("image/channels is ", c, ", not 1, 3 or 4");
    if (format == "raw") {
      if (static_cast<int64_t>(encoded.size()) != h * w * c)
        return str("raw image holds ", encoded.size(), " bytes, ", h, "x", w, "x", c, " needs ", h * w * c);
      *facts = RecordFacts{.height = h, .width = w, .channels = c, .encoded = encoded, .format = format};
      if (measure) measure_record(false, {}, pixels, facts);
      return "";
    }
    if (format != "png" && format != "jpeg") return str("image/format \"", format, "\" is not png, jpeg or raw");
    ImageFormat actual = detect_image_format(encoded);
    if (actual == ImageFormat::kUnknown) return str("image/encoded (", encoded.size(), " bytes) is not a JPEG or PNG");
    if (format != image_format_name(actual))
      return str("image/format says ", format, " but image/encoded is ", image_format_name(actual));
    ImageInfo info = read_image_info(encoded);
    if (info.height != h || info.width != w || info.channels != c)
      return str("the ", format, " header says ", info.height, "x", info.width, "x", info.channels,
                 ", the record says ", h, "x", w, "x", c);
    *facts = RecordFacts{.height = h, .width = w, .channels = c, .encoded = encoded, .format = format};
    if (ctx.decode) {
      pixels->resize(decoded_size(info, 0));
      decode_image_into(encoded, 0, pixels->data(), pixels->size());
    }
    if (measure) measure_record(ctx.decode, {}, pixels, facts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

void add_error(ShardReport* r, size_t max_listed, std::string msg) {
  ++r->error_count;
  if (r->errors.size() < max_listed) r->errors.push_back(std::move(msg));
}

uint64_t measure_per_shard(const CheckOptions& o, size_t shards) {
  if (o.decode) return UINT64_MAX;
  return shards == 0 ? 0 : (o.survey.stats_records + shards - 1) / shards;
}

void measure_record(bool decoded, const ImageLimits& limits, std::vector<uint8_t>* pixels, RecordFacts* f) {
  const size_t n = static_cast<size_t>(f->height * f->width);
  const int c = static_cast<int>(f->channels);
  if (f->format == "raw") return measure_pixels(reinterpret_cast<const uint8_t*>(f->encoded.data()), n, c, f);
  if (!decoded) {
    pixels->resize(n * static_cast<size_t>(c));
    const ImageInfo info = decode_image_into(f->encoded, c, pixels->data(), pixels->size(), limits);
    FASTNN_CHECK(info.width == f->width && info.height == f->height, "decoded size differs from the header");
  }
  measure_pixels(pixels->data(), n, c, f);
}


bool scan_shard(const RecordCheck& check, int64_t num_classes, const std::string& path, Compression compression,
                size_t max_listed, Progress* progress, ShardReport* r, const ShardSurvey* survey) {
  if (num_classes > 0) r->histogram.assign(num_classes, 0);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    add_error(r, max_listed, "file is missing");
    return false;
  }
  r->bytes = static_cast<uint64_t>(st.st_size);
  TFRecordReaderOptions ro;
  ro.compression = compression;
  std::unique_ptr<TFRecordReader> reader;
  std::string read_error;
  try {
    reader = std::make_unique<TFRecordReader>(path, ro);
  } catch (const Error& e) {
    add_error(r, max_listed, e.what());
    return false;
  }
  const int concurrency = std::max(1, tbb::this_task_arena::max_concurrency());
  const size_t tokens = static_cast<size_t>(2 * concurrency);
  std::vector<Chunk> pool(tokens);
  std::vector<Chunk*> free_list;
  std::mutex mu;
  for (Chunk& c : pool) free_list.push_back(&c);
  tbb::enumerable_thread_specific<std::vector<uint8_t>> pixels;
  bool done = false;
  uint64_t next_index = 0;

  tbb::this_task_arena::isolate([&] {
    tbb::parallel_pipeline(
        tokens,
        tbb::make_filter<void, Chunk*>(
            tbb::filter_mode::serial_in_order,
            [&](tbb::flow_control& fc) -> Chunk* {
              if (done) {
                fc.stop();
                return nullptr;
              }
              Chunk* c;
              {
                std::lock_guard<std::mutex> lock(mu);
                FASTNN_CHECK(!free_list.empty(), "check: chunk pool exhausted");
                c = free_list.back();
                free_list.pop_back();
              }
              c->first_index = next_index;
              c->records.clear();
              c->offsets.clear();
              std::string_view rec;
              try {
                while (c->records.size() < kChunkRecords && reader->next(&rec)) {
                  c->records.emplace_back(rec);
                  c->offsets.push_back(reader->record_offset());
                }
              } catch (const Error& e) {
                read_error = e.what();  // framing or CRC: nothing after it can be trusted
                done = true;
              }
              if (c->records.size() < kChunkRecords) done = true;
              next_index += c->records.size();
              return c;
            }) &
            tbb::make_filter<Chunk*, Chunk*>(tbb::filter_mode::parallel,
                                             [&](Chunk* c) {
                                               size_t n = c->records.size();
                                               c->labels.assign(n, -1);
                                               c->errors.assign(n, "");
                                               c->facts.assign(n, RecordFacts{});
                                               for (size_t i = 0; i < n; ++i) {
                                                 const bool measure =
                                                     survey && c->first_index + i < survey->measure_first;
                                                 c->errors[i] = check(c->records[i], measure, &pixels.local(),
                                                                      &c->labels[i], &c->facts[i]);
                                               }
                                               return c;
                                             }) &
            tbb::make_filter<Chunk*, void>(tbb::filter_mode::serial_in_order, [&](Chunk* c) {
              for (size_t i = 0; i < c->records.size(); ++i) {
                if (c->labels[i] >= 0 && num_classes > 0) ++r->histogram[c->labels[i]];
                if (c->labels[i] >= 0 && num_classes <= 0) ++r->label_counts[c->labels[i]];
                if (!c->errors[i].empty())
                  add_error(r, max_listed, str("record ", c->first_index + i, " at offset ", c->offsets[i], ": ", c->errors[i]));
                if (!survey) continue;
                const RecordFacts& f = c->facts[i];
                r->survey.add(f);
                // Samples come from records that passed the check; the serial stage sees them in order.
                const SampleTable::Key key{survey->split, survey->shard, c->first_index + i};
                if (c->errors[i].empty() && survey->samples && survey->samples->wants(c->labels[i], key))
                  survey->samples->offer(c->labels[i], key, f, survey->split_name, r->file);
              }
              r->records += c->records.size();
              if (progress) progress->add(c->records.size());
              std::lock_guard<std::mutex> lock(mu);
              free_list.push_back(c);
            }));
  });
  if (!read_error.empty()) add_error(r, max_listed, read_error);
  return true;
}

namespace {

void check_shard(const Context& ctx, const std::string& path, const ShardInfo& expect, Compression compression,
                 size_t max_listed, Progress* progress, ShardReport* r, const ShardSurvey* survey) {
  r->file = expect.file;
  const RecordCheck check = [&ctx](std::string_view rec, bool measure, std::vector<uint8_t>* pixels, int64_t* label,
                                   RecordFacts* facts) { return check_record(ctx, rec, measure, pixels, label, facts); };
  if (!scan_shard(check, ctx.m->num_classes(), path, compression, max_listed, progress, r, survey)) return;
  if (r->bytes != expect.bytes) add_error(r, max_listed, str("file has ", r->bytes, " bytes, the manifest says ", expect.bytes));
  if (r->records != expect.records)
    add_error(r, max_listed, str("holds ", r->records, " records, the manifest says ", expect.records));
  else if (r->histogram != expect.label_histogram)
    add_error(r, max_listed, "label histogram differs from the manifest's");
}


// Each split's classes, and the warnings about them, after the shards are counted.
CheckReport with_class_balance(CheckReport r, double max_ratio) {
  for (SplitReport& s : r.splits) {
    if (s.histogram.empty()) continue;
    s.classes = class_balance(s.histogram);
    for (std::string& w : class_balance_warnings(s.name, s.classes, r.manifest.class_names, max_ratio))
      r.warnings.push_back(std::move(w));
  }
  return r;
}

}  // namespace

void share_shard_reports(RankGroup& group, const std::vector<size_t>& mine, std::vector<ShardReport*>& reports) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t j : mine) {
    const ShardReport& r = *reports[j];
    nlohmann::json counts = nlohmann::json::array();
    for (const auto& [label, n] : r.label_counts) counts.push_back({label, n});
    nlohmann::json sizes = nlohmann::json::array(), stats = nlohmann::json::array();
    for (const auto& [size, n] : r.survey.sizes)
      sizes.push_back({std::get<0>(size), std::get<1>(size), std::get<2>(size), n});
    for (const auto& [channels, c] : r.survey.channel_stats)
      stats.push_back({channels, c.images, c.pixels, c.sum, c.sum_sq});
    out.push_back({j, r.records, r.bytes, r.histogram, r.error_count, r.errors, counts,
                   {sizes, r.survey.other_sizes, stats, r.survey.decoded}});
  }
  for (const std::string& block : exchange(group, [&] { return out.dump(); })) {
    for (const nlohmann::json& e : nlohmann::json::parse(block)) {
      ShardReport& r = *reports[e[0].get<size_t>()];
      r.records = e[1].get<uint64_t>();
      r.bytes = e[2].get<uint64_t>();
      r.histogram = e[3].get<std::vector<uint64_t>>();
      r.error_count = e[4].get<uint64_t>();
      r.errors = e[5].get<std::vector<std::string>>();
      r.label_counts.clear();
      for (const nlohmann::json& c : e[6]) r.label_counts[c[0].get<int64_t>()] = c[1].get<uint64_t>();
      const nlohmann::json& sv = e[7];
      r.survey = ImageSurvey{};
      for (const nlohmann::json& z : sv[0])
        r.survey.sizes[{z[0].get<int64_t>(), z[1].get<int64_t>(), z[2].get<int64_t>()}] = z[3].get<uint64_t>();
      r.survey.other_sizes = sv[1].get<uint64_t>();
      for (const nlohmann::json& c : sv[2]) {
        ChannelStats& cs = r.survey.channel_stats[c[0].get<int>()];
        cs.channels = c[0].get<int>();
        cs.images = c[1].get<uint64_t>();
        cs.pixels = c[2].get<uint64_t>();
        cs.sum = c[3].get<std::array<double, 4>>();
        cs.sum_sq = c[4].get<std::array<double, 4>>();
      }
      r.survey.decoded = sv[3].get<uint64_t>();
    }
  }
}

void share_samples(RankGroup& group, SampleTable& samples) {
  ItemWriter w;
  std::vector<SampleTable::Kept> mine = samples.take_keyed();
  w.u64(mine.size());
  for (const SampleTable::Kept& k : mine) {
    const SampleImage& s = k.sample;
    w.u64(static_cast<uint64_t>(k.label)).u64(std::get<0>(k.key)).u64(std::get<1>(k.key)).u64(std::get<2>(k.key));
    w.text(s.split).text(s.shard).u64(s.record).u64(static_cast<uint64_t>(s.thumbnail.width));
    w.u64(static_cast<uint64_t>(s.thumbnail.height)).u64(static_cast<uint64_t>(s.thumbnail.channels));
    w.pods(s.thumbnail.pixels);
  }
  const std::string block = w.take();
  for (const std::string& from : exchange(group, [&] { return block; })) {
    ItemReader in(from);
    for (uint64_t n = in.u64(); n > 0; --n) {
      const int64_t label = static_cast<int64_t>(in.u64());
      const size_t split = in.u64(), shard = in.u64();
      const uint64_t record = in.u64();
      SampleImage s;
      s.label = label;
      s.split = in.text();
      s.shard = in.text();
      s.record = in.u64();
      s.thumbnail.width = static_cast<int>(in.u64());
      s.thumbnail.height = static_cast<int>(in.u64());
      s.thumbnail.channels = static_cast<int>(in.u64());
      s.thumbnail.pixels = in.pods<uint8_t>();
      samples.keep(label, {split, shard, record}, std::move(s));
    }
  }
}

void check_my_shards(const CheckOptions& o, RankGroup* group, uint64_t my_records, const std::vector<size_t>& mine,
                     const std::vector<ShardReport*>& reports, SampleTable* samples,
                     const std::function<void(size_t job, Progress* progress)>& check_one) {
  const int rank = group ? group->rank() : 0, ranks = group ? group->size() : 1;
  Progress progress(ranks > 1 ? str("check (rank ", rank, " of ", ranks, ")") : std::string("check"), my_records,
                    "records");
  progress.set_silent(o.quiet || rank != 0);
  std::optional<tbb::global_control> allow;
  if (o.threads > tbb::this_task_arena::max_concurrency())
    allow.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(o.threads));
  tbb::task_arena arena(o.threads > 0 ? o.threads : tbb::task_arena::automatic);
  run_step(group, [&] {
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<size_t>(0, mine.size(), 1), [&](const tbb::blocked_range<size_t>& r) {
        for (size_t i = r.begin(); i != r.end(); ++i) check_one(mine[i], &progress);
      });
    });
  });
  progress.finish();
  if (!group) return;
  std::vector<ShardReport*> shared = reports;
  share_shard_reports(*group, mine, shared);
  if (o.survey.enabled) share_samples(*group, *samples);
}

uint64_t CheckReport::error_count() const {
  uint64_t n = errors.size();
  for (const SplitReport& s : splits) {
    n += s.errors.size();
    for (const ShardReport& sh : s.shards) n += sh.error_count;
  }
  return n;
}

CheckReport check_shard_set(const CheckOptions& o) {
  RankGroup* group = o.group && o.group->size() > 1 ? o.group : nullptr;
  const int rank = group ? group->rank() : 0, ranks = group ? group->size() : 1;
  check_thread_count(o.threads, "--threads");
  const auto t0 = std::chrono::steady_clock::now();
  bool plain = false;
  run_step(group, [&] {
    struct stat st;
    const bool is_dir = ::stat(o.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (!(o.max_class_ratio >= 1)) throw ConfigError("--max-class-ratio must be at least 1");
    plain = !is_dir || ::stat((o.dir + "/" + kManifestFileName).c_str(), &st) != 0;
  });
  if (plain) return with_class_balance(check_plain_shards(o), o.max_class_ratio);
  CheckReport report;
  std::vector<const SplitInfo*> splits;
  uint64_t total = 0;
  run_step(group, [&] {
    report.manifest = read_manifest(o.dir);
    const Manifest& m = report.manifest;
    report.decoded = o.decode;
    report.num_gpus = o.num_gpus > 0 ? o.num_gpus : m.num_gpus;
    if (!(o.alpha > 0 && o.alpha < 1)) throw ConfigError("--alpha must be in (0, 1)");
    if (!o.split.empty() && !m.find_split(o.split)) {
      std::string names;
      for (const SplitInfo& s : m.splits) names += (names.empty() ? "" : ", ") + s.name;
      throw ConfigError(str(o.dir, ": no split \"", o.split, "\" (the manifest has ", names, ")"));
    }
  });
  const Manifest& m = report.manifest;
  const Compression compression = parse_compression(m.compression);
  const int64_t S = m.num_shards();
  if (S % report.num_gpus != 0)
    report.errors.push_back(str(S, " shards per split cannot be spread evenly over ", report.num_gpus,
                                " GPUs (", report.num_gpus, " does not divide ", S, ")"));

  // Stray files: shards of another shard count, temporaries of an unfinished run.
  if (DIR* d = ::opendir(o.dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      bool known = false;
      for (const SplitInfo& s : m.splits)
        for (const ShardInfo& sh : s.shards) known = known || sh.file == n;
      if (is_shard_file_name(n) && !known) report.warnings.push_back(str(n, ": shard file not in the manifest"));
      if (OutputDir::is_temp_name(n)) report.warnings.push_back(str(n, ": temporary file of an unfinished conversion"));
    }
    ::closedir(d);
    std::sort(report.warnings.begin(), report.warnings.end());
  }

  for (const SplitInfo& s : m.splits)
    if (o.split.empty() || s.name == o.split) splits.push_back(&s);

  Context ctx{&m, o.decode, !m.coarse_class_names.empty()};
  struct Job {
    size_t split, shard;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < splits.size(); ++i) {
    SplitReport sr;
    sr.name = splits[i]->name;
    sr.shards.resize(splits[i]->shards.size());
    report.splits.push_back(std::move(sr));
    for (size_t k = 0; k < splits[i]->shards.size(); ++k) jobs.push_back({i, k});
  }
  // Under mpirun each rank checks the shards dealt to it (round robin, as convert deals them).
  std::vector<size_t> mine;
  for (size_t j = 0; j < jobs.size(); ++j)
    if (job_owner(j, ranks) == rank) {
      mine.push_back(j);
      total += splits[jobs[j].split]->shards[jobs[j].shard].records;
    }
  report.surveyed = o.survey.enabled;
  report.measured_per_shard = o.survey.enabled ? measure_per_shard(o, jobs.size()) : 0;
  SampleTable samples(o.survey);
  std::vector<ShardSurvey> surveys(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j)
    surveys[j] = {report.measured_per_shard, &samples, jobs[j].split, jobs[j].shard, splits[jobs[j].split]->name};
  for (const Job& job : jobs)
    report.splits[job.split].shards[job.shard].file = splits[job.split]->shards[job.shard].file;
  std::vector<ShardReport*> reports;
  for (const Job& job : jobs) reports.push_back(&report.splits[job.split].shards[job.shard]);
  check_my_shards(o, group, total, mine, reports, &samples, [&](size_t j, Progress* progress) {
    const Job& job = jobs[j];
    const ShardInfo& sh = splits[job.split]->shards[job.shard];
    check_shard(ctx, o.dir + "/" + sh.file, sh, compression, o.max_errors_listed, progress, reports[j],
                o.survey.enabled ? &surveys[j] : nullptr);
  });
  if (o.survey.enabled) {
    for (const SplitReport& sr : report.splits)
      for (const ShardReport& sh : sr.shards) report.survey.merge(sh.survey);
    report.samples = samples.take();
  }

  for (size_t i = 0; i < splits.size(); ++i) {
    const SplitInfo& s = *splits[i];
    SplitReport& sr = report.splits[i];
    sr.histogram.assign(m.num_classes(), 0);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const ShardReport& sh : sr.shards) {
      for (int64_t c = 0; c < m.num_classes(); ++c) sr.histogram[c] += sh.histogram[c];
      lo = std::min(lo, sh.records);
      hi = std::max(hi, sh.records);
      report.records += sh.records;
      report.bytes += sh.bytes;
    }
    if (s.equal_shards && lo != hi)
      sr.errors.push_back(str("train shards must hold equal counts, they hold ", lo, "..", hi));
    if (!s.equal_shards && hi > lo + 1) sr.errors.push_back(str("shard counts differ by more than one (", lo, "..", hi, ")"));
    if (S % report.num_gpus == 0) {
      sr.per_gpu.assign(report.num_gpus, 0);
      for (size_t k = 0; k < sr.shards.size(); ++k) sr.per_gpu[k % report.num_gpus] += sr.shards[k].records;
      auto [mn, mx] = std::minmax_element(sr.per_gpu.begin(), sr.per_gpu.end());
      if (s.equal_shards && *mn != *mx)
        sr.errors.push_back(str("GPUs would read different record counts (", *mn, "..", *mx, "): multi-GPU training would hang"));
    }
    sr.p_threshold = o.alpha / static_cast<double>(sr.shards.size());
    for (ShardReport& sh : sr.shards) {
      sh.balance = chi_square_goodness_of_fit(sh.histogram, sr.histogram);
      sr.min_p_value = std::min(sr.min_p_value, sh.balance.p_value);
      if (sh.balance.p_value < sr.p_threshold)
        add_error(&sh, o.max_errors_listed,
                  str("label histogram differs from the split's (chi-square ", sh.balance.statistic, ", ", sh.balance.dof,
                      " dof, p = ", sh.balance.p_value, " < ", sr.p_threshold, "): the split is not shuffled"));
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return with_class_balance(std::move(report), o.max_class_ratio);
}

}  // namespace fastnn::converters
