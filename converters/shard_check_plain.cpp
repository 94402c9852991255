// `fastnn check` on shards without manifest.json (contract: shard_check.h).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <optional>

#include "converters/foreign_record.h"
#include "converters/rank_group.h"
#include "converters/shard_check_internal.h"
#include "core/atomic_output.h"
#include "core/check.h"
#include "core/comma_list.h"
#include "core/dataset_files.h"
#include "core/progress.h"
#include "core/resources.h"

namespace fastnn::converters {
namespace {

// Above this many inferred classes (no labels.txt: largest label + 1) the balance test is skipped
// rather than allocating shards × classes counters for what is most likely a corrupt label.
constexpr int64_t kMaxInferredClasses = int64_t{1} << 16;

// "...-00003-of-00005..." → (3, 5); nullopt when the name has no such part.
std::optional<std::pair<int64_t, int64_t>> shard_position(std::string_view name) {
  for (size_t p = name.find("-of-"); p != std::string_view::npos; p = name.find("-of-", p + 1)) {
    size_t a = p, b = p + 4;
    while (a > 0 && std::isdigit(static_cast<unsigned char>(name[a - 1]))) --a;
    size_t e = b;
    while (e < name.size() && std::isdigit(static_cast<unsigned char>(name[e]))) ++e;
    if (a == p || e == b || p - a > 9 || e - b > 9 || a == 0 || (name[a - 1] != '-' && name[a - 1] != '_')) continue;
    return std::make_pair(std::stoll(std::string(name.substr(a, p - a))), std::stoll(std::string(name.substr(b, e - b))));
  }
  return std::nullopt;
}

bool looks_like_shard(const std::string& name) {
  return name.find(".tfrecord") != std::string::npos || shard_position(name).has_value();
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The shard files: a folder's shard-named files, or the patterns' matches.
std::vector<std::string> find_shards(const CheckOptions& o, bool is_dir, std::string* folder,
                                     std::vector<std::string>* others) {
  std::vector<std::string> files;
  if (is_dir) {
    *folder = o.dir;
    DIR* d = ::opendir(o.dir.c_str());
    if (!d) throw_io_error(o.dir, "list folder");
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      if (n[0] == '.' || n == kLabelsFileName || OutputDir::is_temp_name(n)) continue;
      const std::string p = o.dir + "/" + n;
      struct stat st;
      if (::stat(p.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
      (looks_like_shard(n) ? files : *others).push_back(p);
    }
    if (files.empty())
      throw ConfigError(str(o.dir, "/", kManifestFileName, " does not exist and ", o.dir,
                            " holds no TFRecord files (names with .tfrecord or -NNNNN-of-NNNNN) to check without it"));
    return files;
  }
  std::vector<std::string> patterns;
  for (std::string_view pattern : split_commas(o.dir))
    if (!pattern.empty()) patterns.emplace_back(pattern);
  files = expand_patterns(patterns, "", "check");
  const size_t slash = files.front().rfind('/');
  *folder = slash == std::string::npos ? "." : files.front().substr(0, std::max<size_t>(slash, 1));
  return files;
}

std::string check_foreign(const ForeignRecordParser& parser, int64_t num_classes, bool decode, std::string_view rec,
                          bool measure, std::vector<uint8_t>* pixels, int64_t* label, RecordFacts* facts) {
  *label = -1;
  try {
    const ForeignRecord r = parser.parse(rec);
    if (r.label < 0) return str("label ", r.label, " is negative");
    if (num_classes > 0 && r.label >= num_classes)
      return str("label ", r.label, " is outside labels.txt's ", num_classes, " classes 0..", num_classes - 1);
    *label = r.label;
    if (r.format_mismatch) return str("image/format says ", r.declared_format, " but the image is ", r.format);
    *facts = RecordFacts{.height = r.height, .width = r.width, .channels = r.channels, .encoded = r.encoded,
                         .format = r.format};
    if (r.format == std::string_view("raw")) {
      if (measure) measure_record(false, parser.limits(), pixels, facts);
      return "";
    }
    // Channels are not compared: TF-slim's ImageNet records say 3 for grayscale JPEGs too (the
    // channels tf.image.decode_jpeg is asked for), which readers handle.
    const bool h = r.record_height && r.record_height != r.height, w = r.record_width && r.record_width != r.width;
    if (h || w)
      return str("the ", r.format, " header says ", r.height, "x", r.width, ", the record says ", r.record_height, "x",
                 r.record_width, " (0: not given)");
    if (decode) {
      const ImageInfo info{detect_image_format(r.encoded), r.width, r.height, r.channels};
      pixels->resize(decoded_size(info, 0));
      decode_image_into(r.encoded, 0, pixels->data(), pixels->size(), parser.limits());
    }
    if (measure) measure_record(decode, parser.limits(), pixels, facts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

CheckReport check_plain_shards(const CheckOptions& o) {
  RankGroup* group = o.group && o.group->size() > 1 ? o.group : nullptr;
  const int rank = group ? group->rank() : 0, ranks = group ? group->size() : 1;
  check_thread_count(o.threads, "--threads");
  const auto t0 = std::chrono::steady_clock::now();
  CheckReport report;
  report.has_manifest = false;
  report.decoded = o.decode;
  report.num_gpus = o.num_gpus;
  struct stat st;
  bool is_dir = false;
  std::string folder;
  std::optional<std::vector<std::string>> labels;
  int64_t num_classes = 0;
  std::vector<std::string> split_names;
  std::vector<std::vector<std::string>> splits;
  uint64_t total_bytes = 0;
  std::vector<Compression> compression;
  struct Job {
    size_t split, shard;
  };
  std::vector<Job> jobs;
  // Under mpirun every rank finds the same files (settled: a failure anywhere is said once).
  run_step(group, [&] {
    if (!(o.alpha > 0 && o.alpha < 1)) throw ConfigError("--alpha must be in (0, 1)");
    is_dir = ::stat(o.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    std::vector<std::string> others;
    const std::vector<std::string> files = find_shards(o, is_dir, &folder, &others);
    if (!others.empty()) {
      std::string list;
      for (size_t i = 0; i < others.size() && i < 5; ++i) list += (i ? ", " : "") + base_name(others[i]);
      report.warnings.push_back(str(others.size(), " other file(s) not checked (names without .tfrecord or "
                                    "-NNNNN-of-NNNNN): ", list, others.size() > 5 ? ", ..." : ""));
    }

    // Classes: labels.txt beside the shards, when there is one.
    labels = read_labels_in(folder);
    num_classes = labels ? static_cast<int64_t>(labels->size()) : 0;
    if (labels) report.labels_file = folder + "/" + kLabelsFileName;

    // Splits from the file names, in the order train, validation, test, other.
    const char* kOrder[] = {"train", "validation", "test", ""};
    std::vector<std::vector<std::string>> split_files(4);
    for (const std::string& f : files) {
      const std::string s = split_of_file_name(base_name(f));
      size_t k = 3;
      for (size_t i = 0; i < 3; ++i)
        if (s == kOrder[i]) k = i;
      split_files[k].push_back(f);
    }
    for (size_t k = 0; k < 4; ++k) {
      const std::string name = k < 3 ? kOrder[k] : "other";
      if (split_files[k].empty() || (!o.split.empty() && o.split != name)) continue;
      split_names.push_back(name);
      splits.push_back(split_files[k]);
    }
    if (splits.empty()) throw ConfigError(str(o.dir, ": no shard of split \"", o.split, "\" (by the file names)"));

    for (size_t i = 0; i < splits.size(); ++i) {
      SplitReport sr;
      sr.name = split_names[i];
      sr.shards.resize(splits[i].size());
      for (size_t k = 0; k < splits[i].size(); ++k) {
        sr.shards[k].file = is_dir ? base_name(splits[i][k]) : splits[i][k];
        jobs.push_back({i, k});
        compression.push_back(detect_compression(splits[i][k]));
        if (::stat(splits[i][k].c_str(), &st) == 0) total_bytes += static_cast<uint64_t>(st.st_size);
      }
      report.splits.push_back(std::move(sr));
    }
  });
  // Each rank checks the shards dealt to it (round robin, as convert deals them).
  std::vector<size_t> mine;
  for (size_t j = 0; j < jobs.size(); ++j)
    if (job_owner(j, ranks) == rank) mine.push_back(j);

  const ForeignRecordParser parser;
  const RecordCheck check = [&](std::string_view rec, bool measure, std::vector<uint8_t>* pixels, int64_t* label,
                                RecordFacts* facts) {
    return check_foreign(parser, num_classes, o.decode, rec, measure, pixels, label, facts);
  };
  report.surveyed = o.survey.enabled;
  report.measured_per_shard = o.survey.enabled ? measure_per_shard(o, jobs.size()) : 0;
  SampleTable samples(o.survey);
  std::vector<ShardSurvey> surveys(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j)
    surveys[j] = {report.measured_per_shard, &samples, jobs[j].split, jobs[j].shard, split_names[jobs[j].split]};
  std::vector<ShardReport*> reports;
  for (const Job& job : jobs) reports.push_back(&report.splits[job.split].shards[job.shard]);
  check_my_shards(o, group, 0, mine, reports, &samples, [&](size_t j, Progress* progress) {
    const Job& job = jobs[j];
    scan_shard(check, num_classes, splits[job.split][job.shard], compression[j], o.max_errors_listed, progress,
               reports[j], o.survey.enabled ? &surveys[j] : nullptr);
  });
  if (o.survey.enabled) {
    for (const SplitReport& sr : report.splits)
      for (const ShardReport& sh : sr.shards) report.survey.merge(sh.survey);
    report.samples = samples.take();
  }

  // Without labels.txt the class count is the largest label + 1 (for the balance test only).
  bool balance = true;
  if (num_classes == 0) {
    int64_t max_label = -1;
    for (const SplitReport& s : report.splits)
      for (const ShardReport& sh : s.shards)
        if (!sh.label_counts.empty()) max_label = std::max(max_label, sh.label_counts.rbegin()->first);
    num_classes = max_label + 1;
    if (num_classes > kMaxInferredClasses) {
      balance = false;
      report.not_checked.push_back(str("label balance: the largest label is ", max_label, ", more than ",
                                       kMaxInferredClasses, " classes without a labels.txt to confirm them"));
    }
    if (balance)
      for (SplitReport& s : report.splits)
        for (ShardReport& sh : s.shards) {
          sh.histogram.assign(num_classes, 0);
          for (const auto& [label, n] : sh.label_counts) sh.histogram[label] = n;
        }
  }

  for (size_t i = 0; i < report.splits.size(); ++i) {
    SplitReport& sr = report.splits[i];
    uint64_t lo = UINT64_MAX, hi = 0;
    if (balance) sr.histogram.assign(num_classes, 0);
    for (const ShardReport& sh : sr.shards) {
      if (balance)
        for (int64_t c = 0; c < num_classes; ++c) sr.histogram[c] += sh.histogram[c];
      lo = std::min(lo, sh.records);
      hi = std::max(hi, sh.records);
      report.records += sh.records;
      report.bytes += sh.bytes;
    }
    if (sr.name == "train" && lo != hi)
      report.warnings.push_back(str("train shards hold ", lo, "..", hi, " records: GPUs reading whole shards would read ",
                                    "different counts (fastnn then divides by record); `fastnn convert tfrecord` makes ",
                                    "them equal"));
    // A "-NNNNN-of-MMMMM" name set must be complete.
    std::map<int64_t, std::vector<bool>> seen;  // MMMMM → indices present
    for (const ShardReport& sh : sr.shards)
      if (auto pos = shard_position(base_name(sh.file))) {
        if (pos->second < 1 || pos->second > kMaxShards || pos->first >= pos->second) {
          sr.errors.push_back(str(sh.file, ": shard ", pos->first, " of ", pos->second, " is not a valid position"));
          continue;
        }
        std::vector<bool>& v = seen[pos->second];
        v.resize(static_cast<size_t>(pos->second), false);
        v[static_cast<size_t>(pos->first)] = true;
      }
    for (const auto& [of, present] : seen) {
      std::vector<int64_t> missing;
      for (size_t k = 0; k < present.size(); ++k)
        if (!present[k]) missing.push_back(static_cast<int64_t>(k));
      if (missing.empty()) continue;
      std::string list;
      for (size_t k = 0; k < missing.size() && k < 5; ++k) list += (k ? ", " : "") + std::to_string(missing[k]);
      sr.errors.push_back(str(missing.size(), " of the ", of, " shards named -NNNNN-of-", of, " are missing (index ",
                              list, missing.size() > 5 ? ", ..." : "", ")"));
    }
    if (o.num_gpus > 0) {
      sr.per_gpu.assign(o.num_gpus, 0);
      for (size_t k = 0; k < sr.shards.size(); ++k) sr.per_gpu[k % o.num_gpus] += sr.shards[k].records;
    }
    sr.p_threshold = o.alpha / static_cast<double>(sr.shards.size());
    if (!balance) continue;
    for (ShardReport& sh : sr.shards) {
      sh.balance = chi_square_goodness_of_fit(sh.histogram, sr.histogram);
      sr.min_p_value = std::min(sr.min_p_value, sh.balance.p_value);
      if (sh.balance.p_value < sr.p_threshold)
        add_error(&sh, o.max_errors_listed,
                  str("label histogram differs from the split's (chi-square ", sh.balance.statistic, ", ",
                      sh.balance.dof, " dof, p = ", sh.balance.p_value, " < ", sr.p_threshold,
                      "): the split is not shuffled (`fastnn convert tfrecord` re-shards it shuffled)"));
    }
  }

  // What a manifest would have allowed.
  report.not_checked.insert(
      report.not_checked.begin(),
      {"per-shard record counts, file sizes and label histograms: no manifest.json records what each shard should "
       "hold, so a shard cut at a record boundary passes",
       "that no shard is missing, beyond the -NNNNN-of-NNNNN numbering of the names"});
  if (!labels)
    report.not_checked.push_back(str("labels against the class count: no ", kLabelsFileName, " in ", folder,
                                     " (labels only checked to be non-negative; the balance test assumes ",
                                     num_classes, " classes)"));
  if (o.num_gpus == 0)
    report.not_checked.push_back("the GPU spread the shards were made for (give --num-gpus N to see per-GPU counts)");

  Manifest& m = report.manifest;
  m.dataset = "";
  m.created_by = "";
  m.num_gpus = std::max<int64_t>(o.num_gpus, 1);
  if (labels) m.class_names = *labels;
  else
    for (int64_t c = 0; c < std::min(num_classes, kMaxInferredClasses); ++c) m.class_names.push_back(std::to_string(c));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace fastnn::converters
