// `fastnn convert FORMAT ...`: raw datasets → balanced, globally shuffled TFRecord shards.
// Flags and what they do: docs/FORMATS.md and `fastnn convert FORMAT --help`.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "cli/mpi_rank_group.h"
#include "converters/base64_tsv.h"
#include "converters/cifar.h"
#include "converters/convert.h"
#include "converters/file_io.h"
#include "converters/folder_layout.h"
#include "converters/image_folder.h"
#include "converters/known_classes.h"
#include "converters/mnist.h"
#include "converters/synthetic.h"
#include "converters/tfrecord_source.h"
#include "core/check.h"
#include "core/class_map.h"
#include "core/comma_list.h"
#include "core/logging.h"
#include "core/manifest.h"
#include "core/name_escape.h"
#include "core/progress.h"

namespace fastnn::cli {
namespace {

using converters::ConvertOptions;

// Flags every format shares.
struct CommonArgs {
  std::vector<std::string> inputs;
  std::string output;
  int64_t num_gpus = 1;
  const CLI::Option* num_gpus_flag = nullptr;  // set by add_format: was --num-gpus given?
  int64_t shards_per_gpu = 4;
  uint64_t seed = 0;
  std::string remainder = "drop";
  bool stratify = false;
  std::string compression = "none";
  int threads = 0;
  bool skip_bad = false;
  bool overwrite = false;
  bool quiet = false;
  bool no_sync = false;
  bool json = false;
  bool verbose = false;
  bool random_holdout = false;
  double collective_timeout = 0;
  std::string class_names_file, labels_from;

  ConvertOptions options() const {
    ConvertOptions o;
    o.inputs = inputs;
    o.output = output;
    o.num_gpus = num_gpus;
    o.shards_per_gpu = shards_per_gpu;
    o.seed = seed;
    o.remainder = converters::parse_remainder(remainder);
    o.stratify = stratify;
    o.compression = parse_compression(compression);
    o.threads = threads;
    o.skip_bad = skip_bad;
    o.overwrite = overwrite;
    o.quiet = quiet;
    o.sync = !no_sync;
    o.created_by = std::string("fastnn ") + FASTNN_VERSION;
    return o;
  }
  // --class-names FILE or --labels-from DIR (an earlier output's class map), into o.class_names_source.
  std::vector<std::string> class_names(ConvertOptions* o) const {
    if (!class_names_file.empty() && !labels_from.empty())
      throw ConfigError("give --class-names or --labels-from, not both: each names every class");
    if (!labels_from.empty()) {
      const std::optional<ClassMap> map = read_folder_class_map(labels_from);
      if (!map) throw ConfigError(str("--labels-from ", labels_from, ": no manifest.json or labels.txt there"));
      o->class_names_source = str("--labels-from ", map->origin);
      return map->names;
    }
    if (class_names_file.empty()) return {};
    o->class_names_source = str("--class-names ", class_names_file);
    return parse_labels_txt(converters::read_whole_file(class_names_file, 64 << 20), class_names_file);
  }
};

// --class-names FILE (image-folder: also spelt --labels-file) and --labels-from DIR.
void add_class_map_flags(CLI::App* sub, CommonArgs& a, const char* names, const char* help) {
  sub->add_option(names, a.class_names_file, help);
  sub->add_option("--labels-from", a.labels_from,
                  "Reuse the class map of an earlier output (its manifest.json or labels.txt), e.g. the train split's "
                  "when converting validation on its own");
}

CLI::App* add_format(CLI::App* convert, const char* name, const char* description, CommonArgs& a, bool needs_input) {
  CLI::App* sub = convert->add_subcommand(name, description);
  sub->option_defaults()->always_capture_default();
  auto* in = sub->add_option("--input,-i", a.inputs, "Input folder or file (repeatable)");
  if (needs_input) in->required();
  sub->add_option("--output,-o", a.output, "Output folder for shards, manifest.json and labels.txt")->required();
  a.num_gpus_flag = sub->add_option("--num-gpus", a.num_gpus, "GPUs the shards are balanced for (every GPU of the "
                                                              "training job reads the same number of records)")
                        ->check(CLI::Range(1, 65536));
  sub->add_option("--shards-per-gpu", a.shards_per_gpu, "Shards per GPU (shards per split = num-gpus × this)")
      ->check(CLI::Range(1, 65536));
  sub->add_option("--seed", a.seed, "Shuffle seed: same inputs and seed give byte-identical shards");
  sub->add_option("--remainder", a.remainder,
                  "Train samples that do not fill every shard equally: drop them, or pad with random repeats")
      ->check(CLI::IsMember({"drop", "pad"}));
  sub->add_flag("--stratify", a.stratify, "Every shard's per-class counts differ by at most one");
  sub->add_option("--compression", a.compression, "Whole-file compression of the shards (tf.data compression_type)")
      ->check(CLI::IsMember({"none", "gzip", "zlib", "NONE", "GZIP", "ZLIB"}));
  sub->add_option("--threads", a.threads, "Worker threads (0: all cores); output does not depend on it")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--skip-bad", a.skip_bad, "Skip, count and list bad samples instead of failing");
  sub->add_flag("--overwrite", a.overwrite, "Replace a finished conversion already in --output");
  sub->add_flag("--quiet,-q", a.quiet, "No progress lines");
  sub->add_flag("--verbose", a.verbose, "Name every ignored input file (default: the first few)");
  sub->add_flag("--json", a.json, "Print the result as one JSON object: output, seconds, bytes written, the manifest");
  sub->add_flag("--no-sync", a.no_sync,
                "Skip the fsync before the commit (faster; a power failure may then leave a manifest naming "
                "unwritten data; kill -9 safety is unchanged)");
  sub->add_option("--collective-timeout", a.collective_timeout, kCollectiveTimeoutHelp)->check(CLI::NonNegativeNumber);
  return sub;
}

constexpr size_t kIgnoredShown = 5;

void print_summary(const converters::ConvertResult& r, bool verbose) {
  const Manifest& m = r.manifest;
  std::printf("%-12s %7s %15s %10s %8s %7s %8s %8s %10s\n", "split", "shards", "records/shard", "records", "dropped",
              "padded", "skipped", "ignored", "MB");
  for (const SplitInfo& s : m.splits) {
    uint64_t lo = UINT64_MAX, hi = 0, bytes = 0;
    for (const ShardInfo& sh : s.shards) {
      lo = std::min(lo, sh.records);
      hi = std::max(hi, sh.records);
      bytes += sh.bytes;
    }
    std::string per = lo == hi ? std::to_string(lo) : str(lo, "-", hi);
    std::printf("%-12s %7zu %15s %10llu %8zu %7zu %8zu %8llu %10.1f\n", s.name.c_str(), s.shards.size(), per.c_str(),
                static_cast<unsigned long long>(s.num_records), s.dropped.size(), s.padded.size(), s.skipped.size(),
                static_cast<unsigned long long>(s.ignored_files), bytes / 1e6);
  }
  uint64_t records = 0;
  for (const SplitInfo& s : m.splits) records += s.num_records;
  std::printf("%s: %llu records, %d classes, %.1f MB in %.2f s (scan %.2f s, write %.2f s, %s records/s)\n",
              r.output.c_str(), static_cast<unsigned long long>(records), static_cast<int>(m.num_classes()),
              r.bytes_written / 1e6, r.total_seconds, r.scan_seconds, r.write_seconds,
              Progress::human(r.write_seconds > 0 ? records / r.write_seconds : 0).c_str());
  if (r.ranks > 1) std::printf("written by %d ranks (mpirun), %llu records by rank 0\n", r.ranks,
                               static_cast<unsigned long long>(r.records_written_here));
  for (const SplitInfo& s : m.splits)
    for (size_t i = 0; i < s.skipped.size() && i < 5; ++i)
      std::printf("skipped %s: %s\n", s.skipped[i].source.c_str(), s.skipped[i].reason.c_str());
  if (!m.class_names_source.empty()) std::printf("class names: %s\n", m.class_names_source.c_str());
  uint64_t ignored = 0;
  for (const SplitInfo& s : m.splits) ignored += s.ignored_files;
  if (ignored > 0 && m.dataset == "base64-tsv") {  // its `ignored` count is of blank lines (docs/FORMATS.md)
    std::printf("passed over %llu blank line(s)\n", static_cast<unsigned long long>(ignored));
  } else if (ignored > 0) {
    const size_t shown = verbose ? r.ignored.size() : std::min<size_t>(r.ignored.size(), kIgnoredShown);
    std::printf("ignored %llu input file(s)%s\n", static_cast<unsigned long long>(ignored),
                shown < ignored ? str(", the first ", shown, " (--verbose names all)").c_str() : "");
    for (size_t i = 0; i < shown; ++i)
      std::printf("  %s: %s\n", escape_name(r.ignored[i].source).c_str(), r.ignored[i].reason.c_str());
  }
  for (const std::string& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  std::fflush(stdout);
}

// --json: the manifest as written (splits, shard record counts, histograms) with the run's totals.
void print_json(const converters::ConvertResult& r) {
  const nlohmann::json j = {{"output", r.output}, {"seconds", r.total_seconds}, {"scan_seconds", r.scan_seconds},
                            {"write_seconds", r.write_seconds}, {"source_bytes", r.source_bytes},
                            {"bytes_written", r.bytes_written}, {"ranks", r.ranks}, {"warnings", r.warnings},
                            {"manifest", nlohmann::json::parse(serialize_manifest(r.manifest))}};
  print_json_line(j);
}

// `a` gives --json and --verbose, so that a new format cannot leave them silently unread.
void run(converters::Source& source, const ConvertOptions& o, const CommonArgs& a) {
  // Under mpirun the ranks share the work (converters/rank_group.h); rank 0 reports.
  const std::unique_ptr<MpiRankGroup> group = mpi_rank_group(a.collective_timeout);
  ConvertOptions options = o;
  if (group) {
    options.group = group.get();
    if (group->rank() != 0) options.quiet = true;
  }
  // The default is said, not silent: shards for one GPU train on N only after a rebalance.
  if (a.num_gpus_flag->count() == 0 && !options.quiet && !a.json)
    log_info("balancing the shards for 1 GPU (the default; --num-gpus N for a job on N GPUs)");
  try {
    const converters::ConvertResult r = converters::run_conversion(source, options);
    if (r.rank != 0) return;
    a.json ? print_json(r) : print_summary(r, a.verbose);
  } catch (...) {
    end_with_the_group(group.get());
  }
}

}  // namespace

void add_convert_command(CLI::App& app) {
  CLI::App* convert = app.add_subcommand(
      "convert", "Convert a dataset into balanced, globally shuffled TFRecord shards + manifest.json");
  convert->require_subcommand(1);

  {
    auto a = std::make_shared<CommonArgs>();
    auto num_classes = std::make_shared<int>(10);
    auto level = std::make_shared<int>(6);
    CLI::App* sub = add_format(convert, "mnist",
                               "MNIST-format IDX folder (train-/t10k- images and labels, optionally .gz) → 1-channel PNG",
                               *a, true);
    auto dataset = std::make_shared<std::string>("auto");
    sub->add_option("--num-classes", *num_classes, "Labels must be below this")->check(CLI::Range(1, 256));
    add_class_map_flags(sub, *a, "--class-names", "File of class names (labels.txt style or one per line)");
    sub->add_option("--dataset", *dataset,
                    "Which MNIST-format dataset, for its class names: fashion-mnist, mnist (digits), other (numbers), or "
                    "auto: the input path's folder name says (the names applied are printed)")
        ->check(CLI::IsMember({"auto", "mnist", "fashion-mnist", "other"}));
    sub->add_option("--png-compression-level", *level, "zlib level of the PNGs")->check(CLI::Range(0, 9));
    sub->callback([a, num_classes, level, dataset] {
      if (a->inputs.size() != 1) throw ConfigError("mnist takes exactly one --input folder");
      ConvertOptions o = a->options();
      converters::MnistOptions mo;
      mo.dir = a->inputs[0];
      mo.num_classes = *num_classes;
      mo.class_names = a->class_names(&o);
      mo.dataset = converters::parse_mnist_dataset(*dataset);
      mo.png_compression_level = *level;
      converters::MnistSource src(mo);
      run(src, o, *a);
    });
  }
  for (bool c100 : {false, true}) {
    auto a = std::make_shared<CommonArgs>();
    auto level = std::make_shared<int>(6);
    CLI::App* sub = add_format(convert, c100 ? "cifar100" : "cifar10",
                               c100 ? "CIFAR-100 binary version (train.bin, test.bin) → RGB PNG, fine and coarse labels"
                                    : "CIFAR-10 binary version (data_batch_1..5.bin, test_batch.bin) → RGB PNG",
                               *a, true);
    add_class_map_flags(sub, *a, "--class-names", "File of class names (overrides the dataset's names file)");
    sub->add_option("--png-compression-level", *level, "zlib level of the PNGs")->check(CLI::Range(0, 9));
    sub->callback([a, level, c100] {
      if (a->inputs.size() != 1) throw ConfigError("cifar takes exactly one --input folder");
      ConvertOptions o = a->options();
      converters::CifarOptions co;
      co.dir = a->inputs[0];
      co.cifar100 = c100;
      co.class_names = a->class_names(&o);
      co.png_compression_level = *level;
      converters::CifarSource src(co);
      run(src, o, *a);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto fo = std::make_shared<converters::ImageFolderOptions>();
    auto vfrac = std::make_shared<double>(0);
    auto vcount = std::make_shared<uint64_t>(0);
    CLI::App* sub = add_format(convert, "image-folder",
                               "Folders of JPEG/PNG files, one sub-folder per class → the files' bytes (or re-encoded)",
                               *a, true);
    sub->add_option("--validation-fraction", *vfrac, "Hold out this fraction of the samples as split \"validation\"")
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--validation-count", *vcount, "Hold out this many samples as split \"validation\"");
    sub->add_option("--resize-shorter-side", fo->record.resize_shorter_side,
                    "Re-encode (JPEG) images whose shorter side is larger than this many pixels")
        ->check(CLI::Range(1, 65535));
    sub->add_option("--jpeg-quality", fo->record.jpeg_quality, "Quality of re-encoded JPEGs")->check(CLI::Range(1, 100));
    sub->add_flag("--random-holdout", a->random_holdout,
                  "Hold out a uniformly random sample (default: every class gives its share)");
    sub->add_option("--split", fo->split,
                    "Name of the split a class-folder tree goes to (default train; train gets equal shards); a tree of "
                    "split folders names its own splits");
    auto layout = std::make_shared<std::string>("auto");
    sub->add_option("--layout", *layout,
                    "What the input's folders are: classes, splits (train, val, validation, test, each holding class "
                    "folders), or auto: split folders when every folder there is split-named, a mix is refused")
        ->check(CLI::IsMember({"auto", "classes", "splits"}));
    add_class_map_flags(sub, *a, "--class-names,--labels-file",
                        "Class map file (labels.txt style or one name per line): folders are labelled by their name's "
                        "position in it, a folder not in it is an error");
    sub->callback([a, fo, vfrac, vcount, layout] {
      fo->roots = a->inputs;
      fo->layout = converters::parse_folder_layout(*layout);
      ConvertOptions o = a->options();
      o.validation_fraction = *vfrac;
      o.validation_count = *vcount;
      o.random_holdout = a->random_holdout;
      o.holdout_hint = "hold some out with --validation-fraction F, or put the class folders in split folders (train/, val/)";
      fo->class_names = a->class_names(&o);
      fo->class_names_source = o.class_names_source;
      converters::ImageFolderSource src(*fo);
      run(src, o, *a);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto bo = std::make_shared<converters::Base64TsvOptions>();
    CLI::App* sub = add_format(convert, "base64-tsv",
                               "Files of base64(image)<TAB>label lines (PLSC format) → the decoded image bytes", *a, true);
    sub->add_flag("--label-first", bo->label_first, "Lines are label<TAB>base64");
    sub->add_option("--num-classes", bo->num_classes, "Labels must be below this (default: largest label + 1)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    add_class_map_flags(sub, *a, "--class-names", "File of class names (labels.txt style or one per line)");
    sub->add_option("--resize-shorter-side", bo->record.resize_shorter_side,
                    "Re-encode (JPEG) images whose shorter side is larger than this many pixels")
        ->check(CLI::Range(1, 65535));
    sub->add_option("--jpeg-quality", bo->record.jpeg_quality, "Quality of re-encoded JPEGs")->check(CLI::Range(1, 100));
    sub->add_option("--split", bo->split, "Name of the split the samples go to (\"train\" gets equal shards)");
    sub->add_option("--max-line-bytes", bo->max_line_bytes, "Longest line accepted");
    sub->callback([a, bo] {
      bo->files = a->inputs;
      ConvertOptions o = a->options();
      bo->class_names = a->class_names(&o);
      converters::Base64TsvSource src(*bo);
      run(src, o, *a);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto to = std::make_shared<converters::TFRecordSourceOptions>();
    CLI::App* sub = add_format(convert, "tfrecord",
                               "Existing TFRecord shards (TF-slim, FastNN, tf.data; any common key spelling) → "
                               "re-sharded, balanced and shuffled, image bytes unchanged",
                               *a, true);
    sub->add_option("--split", to->split,
                    "Put every input in this split (default: train/validation/test from each file's name)");
    sub->add_option("--labels-file", to->labels_file,
                    "Class names, TF-slim's id:name lines (default: the labels.txt beside the inputs, which must "
                    "agree where several folders have one)");
    sub->add_option("--num-classes", to->num_classes,
                    "Labels must be below this (default: the labels file's count, else the largest label + 1)")
        ->check(CLI::Range(int64_t{1}, kMaxClasses));
    sub->add_option("--labels-offset", to->labels_offset,
                    "Subtracted from every label (records whose class 0 is a background class)")
        ->check(CLI::NonNegativeNumber);
    sub->callback([a, to] {
      // --input PATTERN[,PATTERN...], repeatable; each a glob or a file name.
      to->patterns.clear();
      for (const std::string& in : a->inputs)
        for (std::string_view pattern : split_commas(in))
          if (!pattern.empty()) to->patterns.emplace_back(pattern);
      converters::TFRecordSource src(*to);
      run(src, a->options(), *a);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto so = std::make_shared<converters::SyntheticOptions>();
    CLI::App* sub = add_format(convert, "synthetic", "Generated images and labels (mock data for benchmarks)", *a, false);
    sub->add_option("--num-records", so->num_records, "Train records");
    sub->add_option("--num-test-records", so->num_test_records, "Test records (0: no test split)");
    sub->add_option("--height", so->height, "Image height");
    sub->add_option("--width", so->width, "Image width");
    sub->add_option("--channels", so->channels, "1 or 3 (4 for png, raw)");
    sub->add_option("--num-classes", so->num_classes, "Classes (label = index mod classes)");
    sub->add_option("--image-format", so->image_format, "jpeg, png or raw")->check(CLI::IsMember({"jpeg", "png", "raw"}));
    sub->add_option("--jpeg-quality", so->jpeg_quality, "JPEG quality")->check(CLI::Range(1, 100));
    add_class_map_flags(sub, *a, "--class-names", "File of class names");
    sub->callback([a, so] {
      if (!a->inputs.empty()) throw ConfigError("synthetic takes no --input");
      ConvertOptions o = a->options();
      so->class_names = a->class_names(&o);
      converters::SyntheticSource src(*so);
      run(src, o, *a);
    });
  }
}

}  // namespace fastnn::cli
