// `fastnn check DIR|PATTERNS`: verifies a shard set (CRCs, keys, labels, counts, balance), with or
// without a manifest, and prints a report with every split's records per class (warnings for missing
// classes and a largest / smallest ratio above --max-class-ratio); --report FILE.html also writes the picture page (sample
// images per class, class balance, image sizes, channel statistics) from the same pass;
// exits non-zero when anything is wrong. What is checked: converters/shard_check.h; the page:
// converters/check_report_page.h.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/error_report.h"
#include "cli/json_output.h"
#include "cli/mpi_rank_group.h"
#include "converters/check_report_page.h"
#include "converters/shard_check.h"
#include "core/check.h"
#include "core/name_escape.h"
#include "core/progress.h"
#include "core/report/page_file.h"

namespace fastnn::cli {
namespace {

constexpr int64_t kClassTableRows = 40;  // more classes: one summary line per split (--json has every count)

// Records per class, one column per split, and each split's largest / smallest ratio.
void print_classes(const converters::CheckReport& r) {
  std::vector<const converters::SplitReport*> splits;
  for (const converters::SplitReport& s : r.splits)
    if (!s.classes.counts.empty()) splits.push_back(&s);
  if (splits.empty()) return;
  const int64_t classes = static_cast<int64_t>(splits[0]->classes.counts.size());
  const auto& names = r.manifest.class_names;
  std::printf("\nclasses (records per class%s)\n",
              r.manifest.class_names_source.empty() ? "" : str("; names: ", r.manifest.class_names_source).c_str());
  if (classes <= kClassTableRows) {
    std::printf("  %5s  %-24s", "id", "name");
    for (const auto* s : splits) std::printf(" %12s", s->name.c_str());
    std::printf("\n");
    for (int64_t c = 0; c < classes; ++c) {
      const std::string name = c < static_cast<int64_t>(names.size()) ? escape_name(names[c]) : std::to_string(c);
      std::printf("  %5lld  %-24s", static_cast<long long>(c), name.c_str());
      for (const auto* s : splits) {
        const uint64_t n = c < static_cast<int64_t>(s->classes.counts.size()) ? s->classes.counts[c] : 0;
        std::printf(" %12s", n == 0 ? "missing" : std::to_string(n).c_str());
      }
      std::printf("\n");
    }
  }
  for (const auto* s : splits) {
    const converters::ClassBalance& b = s->classes;
    if (b.largest < 0) {
      std::printf("  %s: no record\n", s->name.c_str());
      continue;
    }
    std::printf("  %s: %lld of %lld classes present, largest %llu (class %lld), smallest %llu (class %lld), ratio %.1f\n",
                s->name.c_str(), static_cast<long long>(classes - static_cast<int64_t>(b.missing.size())),
                static_cast<long long>(classes), static_cast<unsigned long long>(b.counts[b.largest]),
                static_cast<long long>(b.largest), static_cast<unsigned long long>(b.counts[b.smallest]),
                static_cast<long long>(b.smallest), b.ratio);
  }
}

void print_report(const converters::CheckReport& r) {
  const Manifest& m = r.manifest;
  if (r.has_manifest) {
    std::printf("%s (%s), %lld classes, %lld GPUs × %lld shards per GPU, compression %s%s\n",
                m.dataset.c_str(), m.created_by.c_str(), static_cast<long long>(m.num_classes()),
                static_cast<long long>(r.num_gpus), static_cast<long long>(m.shards_per_gpu), m.compression.c_str(),
                r.decoded ? ", every image decoded" : "");
  } else {
    std::printf("no manifest.json: TFRecord shards checked on their own, %lld classes (%s)%s\n",
                static_cast<long long>(m.num_classes()),
                r.labels_file.empty() ? "largest label + 1, no labels.txt" : r.labels_file.c_str(),
                r.decoded ? ", every image decoded" : "");
  }
  for (const converters::SplitReport& s : r.splits) {
    std::printf("\nsplit %s (balance: chi-square against the split's label histogram, error below p = %.2g)\n",
                s.name.c_str(), s.p_threshold);
    std::printf("  %-36s %10s %12s %12s %5s %10s  %s\n", "shard", "records", "bytes", "chi-square", "dof", "p", "status");
    for (const converters::ShardReport& sh : s.shards) {
      std::printf("  %-36s %10llu %12llu %12.2f %5lld %10.3g  %s\n", sh.file.c_str(),
                  static_cast<unsigned long long>(sh.records), static_cast<unsigned long long>(sh.bytes),
                  sh.balance.statistic, static_cast<long long>(sh.balance.dof), sh.balance.p_value,
                  sh.error_count == 0 ? "ok" : str(sh.error_count, " error(s)").c_str());
      for (const std::string& e : sh.errors) std::printf("    error: %s\n", e.c_str());
      if (sh.error_count > sh.errors.size())
        std::printf("    ... and %llu more\n", static_cast<unsigned long long>(sh.error_count - sh.errors.size()));
    }
    if (!s.per_gpu.empty()) {
      std::printf("  records per GPU (GPU g reads shards g, g+N, ...):");
      for (size_t g = 0; g < s.per_gpu.size() && g < 16; ++g)
        std::printf(" %llu", static_cast<unsigned long long>(s.per_gpu[g]));
      std::printf(s.per_gpu.size() > 16 ? " ...\n" : "\n");
    }
    std::printf("  smallest balance p-value %.3g\n", s.min_p_value);
    for (const std::string& e : s.errors) std::printf("  error: %s\n", e.c_str());
  }
  print_classes(r);
  for (const std::string& e : r.errors) std::printf("error: %s\n", e.c_str());
  for (const std::string& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  for (const std::string& n : r.not_checked) std::printf("not checked without a manifest: %s\n", n.c_str());
  const std::string verdict = !r.ok()            ? str("FAILED, ", r.error_count(), " problem(s)")
                              : r.warnings.empty() ? std::string("OK")
                                                   : str("OK, with ", r.warnings.size(), " warning(s) above");
  std::printf("\n%llu records, %.1f MB checked in %.2f s: %s\n", static_cast<unsigned long long>(r.records),
              r.bytes / 1e6, r.seconds, verdict.c_str());
  std::fflush(stdout);
}

// --json: the report as one object (the same numbers as the text report), for scripts.
void print_json_report(const converters::CheckReport& r) {
  nlohmann::json splits = nlohmann::json::array();
  for (const converters::SplitReport& s : r.splits) {
    nlohmann::json shards = nlohmann::json::array();
    for (const converters::ShardReport& sh : s.shards)
      shards.push_back({{"file", sh.file}, {"records", sh.records}, {"bytes", sh.bytes}, {"histogram", sh.histogram},
                        {"chi_square", sh.balance.statistic}, {"dof", sh.balance.dof}, {"p_value", sh.balance.p_value},
                        {"error_count", sh.error_count}, {"errors", sh.errors}});
    const converters::ClassBalance& b = s.classes;
    const nlohmann::json classes = {{"counts", b.counts}, {"missing", b.missing}, {"largest", b.largest},
                                    {"smallest", b.smallest}, {"ratio", b.ratio}};
    splits.push_back({{"name", s.name}, {"shards", shards}, {"histogram", s.histogram}, {"records_per_gpu", s.per_gpu},
                      {"min_p_value", s.min_p_value}, {"p_threshold", s.p_threshold}, {"errors", s.errors},
                      {"classes", classes}});
  }
  const nlohmann::json j = {{"ok", r.ok()}, {"error_count", r.error_count()}, {"dataset", r.manifest.dataset},
                            {"num_classes", r.manifest.num_classes()}, {"num_gpus", r.num_gpus}, {"decoded", r.decoded},
                            {"records", r.records}, {"bytes", r.bytes}, {"seconds", r.seconds}, {"splits", splits},
                            {"errors", r.errors}, {"warnings", r.warnings}};
  print_json_line(j);
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto o = std::make_shared<converters::CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Verify a shard set: CRCs, record keys and types, labels, counts per "
                                              "shard and per GPU against the manifest, label balance (a set without "
                                              "a manifest: what can be checked without one)");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("dir", o->dir,
                  "Folder holding manifest.json and the shards; or a folder of shards without a manifest (TF-slim, "
                  "FastNN; labels.txt read when present), or PATTERN[,PATTERN...] globs of shard files")
      ->required();
  cmd->add_option("--split", o->split, "Check only this split");
  cmd->add_option("--num-gpus", o->num_gpus, "GPUs to check the spread for (0: the manifest's)")
      ->check(CLI::Range(int64_t{0}, int64_t{65536}));
  cmd->add_flag("--decode", o->decode, "Decode every image and compare with its height, width and channels");
  cmd->add_option("--alpha", o->alpha, "Significance of the label balance test (per split, Bonferroni over shards)");
  cmd->add_option("--max-class-ratio", o->max_class_ratio,
                  "Warn when a split's largest class has more than this many times the records of its smallest")
      ->check(CLI::Range(1.0, 1e18));
  cmd->add_option("--threads", o->threads, "Worker threads (0: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet,-q", o->quiet, "No progress line");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the report as one JSON object (the exit status is the same)");
  struct PageArgs {
    std::string path;
    bool overwrite = false;
  };
  auto page = std::make_shared<PageArgs>();
  cmd->add_option("--report,--output,-o", page->path,
                  "Also write a self-contained HTML page: sample images per class, class balance per shard, image "
                  "sizes, per-channel mean and standard deviation (written even when the check fails)");
  cmd->add_flag("--overwrite", page->overwrite, "Replace an existing --report file that is not a page fastnn wrote (its own pages "
                "are replaced anyway)");
  cmd->add_option("--report-samples", o->survey.samples_per_class, "Sample images per class on the page")
      ->check(CLI::Range(int64_t{0}, int64_t{64}));
  cmd->add_option("--report-classes", o->survey.max_sample_classes, "Show samples of the classes below this label")
      ->check(CLI::Range(int64_t{0}, int64_t{10000}));
  cmd->add_option("--report-stats-records", o->survey.stats_records,
                  "Records decoded for the channel statistics, spread evenly over the shards (--decode: all)");
  auto collective_timeout = std::make_shared<double>(0);
  cmd->add_option("--collective-timeout", *collective_timeout, kCollectiveTimeoutHelp)->check(CLI::NonNegativeNumber);
  cmd->callback([o, json, page, collective_timeout] {
    o->survey.enabled = !page->path.empty();
    // Refused before the pass, not after minutes of checking (the write checks again).
    if (o->survey.enabled) report::check_page_target(page->path, page->overwrite);
    // Under mpirun the ranks split the shards; rank 0 reports, the others only share the exit status.
    const std::unique_ptr<MpiRankGroup> group = mpi_rank_group(*collective_timeout);
    o->group = group.get();
    converters::CheckReport r;
    try {
      r = converters::check_shard_set(*o);
    } catch (...) {
      end_with_the_group(group.get());
    }
    // Rank 0 prints the report; the other ranks wait in a barrier until it has (mpirun ends the whole job
    // as soon as one rank exits non-zero), then share its exit status.
    if (group && group->rank() != 0) {
      group->barrier();
      if (!r.ok()) throw ExitStatus{1};
      return;
    }
    *json ? print_json_report(r) : print_report(r);
    if (o->survey.enabled) {
      report::write_page_file(page->path, converters::check_report_page(r, *o), page->overwrite);
      if (!*json) std::printf("report written to %s\n", page->path.c_str());
    }
    std::fflush(stdout);
    const auto barrier = [&] {
      if (group) group->barrier();
    };
    if (r.ok()) return barrier();
    exit_with_the_other_ranks(
        std::make_exception_ptr(FormatError(str(o->dir, ": check failed with ", r.error_count(), " problem(s) (see the report)"))),
        barrier);
  });
}

}  // namespace fastnn::cli
