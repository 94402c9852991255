// `fastnn convert FORMAT ...`: raw datasets → balanced, globally shuffled TFRecord shards.
// Flags and what they do: docs/FORMATS.md and `fastnn convert FORMAT --help`.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "converters/base64_tsv.h"
#include "converters/cifar.h"
#include "converters/convert.h"
#include "converters/file_io.h"
#include "converters/image_folder.h"
#include "converters/mnist.h"
#include "converters/synthetic.h"
#include "converters/tfrecord_source.h"
#include "core/check.h"
#include "core/manifest.h"
#include "core/progress.h"

namespace fastnn::cli {
namespace {

using convert::ConvertOptions;

// Flags every format shares.
struct CommonArgs {
  std::vector<std::string> inputs;
  std::string output;
  int64_t num_gpus = 0;
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
  std::string class_names_file;

  ConvertOptions options() const {
    ConvertOptions o;
    o.inputs = inputs;
    o.output = output;
    o.num_gpus = num_gpus;
    o.shards_per_gpu = shards_per_gpu;
    o.seed = seed;
    o.remainder = convert::parse_remainder(remainder);
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
  std::vector<std::string> class_names() const {
    if (class_names_file.empty()) return {};
    return parse_labels_txt(convert::read_whole_file(class_names_file, 64 << 20), class_names_file);
  }
};

CLI::App* add_format(CLI::App* convert, const char* name, const char* description, CommonArgs& a, bool needs_input) {
  CLI::App* sub = convert->add_subcommand(name, description);
  sub->option_defaults()->always_capture_default();
  auto* in = sub->add_option("--input,-i", a.inputs, "Input folder or file (repeatable)");
  if (needs_input) in->required();
  sub->add_option("--output,-o", a.output, "Output folder for shards, manifest.json and labels.txt")->required();
  sub->add_option("--num-gpus", a.num_gpus, "GPUs the shards are balanced for")->required()->check(CLI::Range(1, 65536));
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
  sub->add_flag("--json", a.json, "Print the result as one JSON object: output, seconds, bytes written, the manifest");
  sub->add_flag("--no-sync", a.no_sync,
                "Skip the fsync before the commit (faster; a power failure may then leave a manifest naming "
                "unwritten data; kill -9 safety is unchanged)");
  return sub;
}

void print_summary(const convert::ConvertResult& r) {
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
  for (const SplitInfo& s : m.splits)
    for (size_t i = 0; i < s.skipped.size() && i < 5; ++i)
      std::printf("skipped %s: %s\n", s.skipped[i].source.c_str(), s.skipped[i].reason.c_str());
  std::fflush(stdout);
}

// --json: the manifest as written (splits, shard record counts, histograms) with the run's totals.
void print_json(const convert::ConvertResult& r) {
  const nlohmann::json j = {{"output", r.output}, {"seconds", r.total_seconds}, {"scan_seconds", r.scan_seconds},
                            {"write_seconds", r.write_seconds}, {"source_bytes", r.source_bytes},
                            {"bytes_written", r.bytes_written}, {"manifest", nlohmann::json::parse(serialize_manifest(r.manifest))}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

// `json` has no default, so that a new format cannot leave its --json flag silently unread.
void run(convert::Source& source, const ConvertOptions& o, bool json) {
  const convert::ConvertResult r = convert::run_conversion(source, o);
  json ? print_json(r) : print_summary(r);
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
    sub->add_option("--num-classes", *num_classes, "Labels must be below this")->check(CLI::Range(1, 256));
    sub->add_option("--class-names", a->class_names_file, "File of class names (labels.txt style or one per line)");
    sub->add_option("--png-compression-level", *level, "zlib level of the PNGs")->check(CLI::Range(0, 9));
    sub->callback([a, num_classes, level] {
      if (a->inputs.size() != 1) throw ConfigError("mnist takes exactly one --input folder");
      convert::MnistOptions mo;
      mo.dir = a->inputs[0];
      mo.num_classes = *num_classes;
      mo.class_names = a->class_names();
      mo.png_compression_level = *level;
      convert::MnistSource src(mo);
      run(src, a->options(), a->json);
    });
  }
  for (bool c100 : {false, true}) {
    auto a = std::make_shared<CommonArgs>();
    auto level = std::make_shared<int>(6);
    CLI::App* sub = add_format(convert, c100 ? "cifar100" : "cifar10",
                               c100 ? "CIFAR-100 binary version (train.bin, test.bin) → RGB PNG, fine and coarse labels"
                                    : "CIFAR-10 binary version (data_batch_1..5.bin, test_batch.bin) → RGB PNG",
                               *a, true);
    sub->add_option("--class-names", a->class_names_file, "File of class names (overrides the dataset's names file)");
    sub->add_option("--png-compression-level", *level, "zlib level of the PNGs")->check(CLI::Range(0, 9));
    sub->callback([a, level, c100] {
      if (a->inputs.size() != 1) throw ConfigError("cifar takes exactly one --input folder");
      convert::CifarOptions co;
      co.dir = a->inputs[0];
      co.cifar100 = c100;
      co.class_names = a->class_names();
      co.png_compression_level = *level;
      convert::CifarSource src(co);
      run(src, a->options(), a->json);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto fo = std::make_shared<convert::ImageFolderOptions>();
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
    sub->add_option("--split", fo->split, "Name of the split the samples go to (\"train\" gets equal shards)");
    sub->callback([a, fo, vfrac, vcount] {
      fo->roots = a->inputs;
      ConvertOptions o = a->options();
      o.validation_fraction = *vfrac;
      o.validation_count = *vcount;
      convert::ImageFolderSource src(*fo);
      run(src, o, a->json);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto bo = std::make_shared<convert::Base64TsvOptions>();
    CLI::App* sub = add_format(convert, "base64-tsv",
                               "Files of base64(image)<TAB>label lines (PLSC format) → the decoded image bytes", *a, true);
    sub->add_flag("--label-first", bo->label_first, "Lines are label<TAB>base64");
    sub->add_option("--num-classes", bo->num_classes, "Labels must be below this (default: largest label + 1)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    sub->add_option("--class-names", a->class_names_file, "File of class names (labels.txt style or one per line)");
    sub->add_option("--resize-shorter-side", bo->record.resize_shorter_side,
                    "Re-encode (JPEG) images whose shorter side is larger than this many pixels")
        ->check(CLI::Range(1, 65535));
    sub->add_option("--jpeg-quality", bo->record.jpeg_quality, "Quality of re-encoded JPEGs")->check(CLI::Range(1, 100));
    sub->add_option("--split", bo->split, "Name of the split the samples go to (\"train\" gets equal shards)");
    sub->add_option("--max-line-bytes", bo->max_line_bytes, "Longest line accepted");
    sub->callback([a, bo] {
      bo->files = a->inputs;
      bo->class_names = a->class_names();
      convert::Base64TsvSource src(*bo);
      run(src, a->options(), a->json);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto to = std::make_shared<convert::TFRecordSourceOptions>();
    CLI::App* sub = add_format(convert, "tfrecord",
                               "Existing TFRecord shards (TF-slim, FastNN, tf.data; any common key spelling) → "
                               "re-sharded, balanced and shuffled, image bytes unchanged",
                               *a, true);
    sub->add_option("--split", to->split,
                    "Put every input in this split (default: train/validation/test from each file's name)");
    sub->add_option("--labels-file", to->labels_file,
                    "Class names, TF-slim's id:name lines (default: labels.txt beside the first input, if any)");
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
        for (size_t start = 0; start <= in.size();) {
          size_t comma = in.find(',', start);
          if (comma == std::string::npos) comma = in.size();
          if (comma > start) to->patterns.push_back(in.substr(start, comma - start));
          start = comma + 1;
        }
      convert::TFRecordSource src(*to);
      run(src, a->options(), a->json);
    });
  }
  {
    auto a = std::make_shared<CommonArgs>();
    auto so = std::make_shared<convert::SyntheticOptions>();
    CLI::App* sub = add_format(convert, "synthetic", "Generated images and labels (mock data for benchmarks)", *a, false);
    sub->add_option("--num-records", so->num_records, "Train records");
    sub->add_option("--num-test-records", so->num_test_records, "Test records (0: no test split)");
    sub->add_option("--height", so->height, "Image height");
    sub->add_option("--width", so->width, "Image width");
    sub->add_option("--channels", so->channels, "1 or 3 (4 for png, raw)");
    sub->add_option("--num-classes", so->num_classes, "Classes (label = index mod classes)");
    sub->add_option("--image-format", so->image_format, "jpeg, png or raw")->check(CLI::IsMember({"jpeg", "png", "raw"}));
    sub->add_option("--jpeg-quality", so->jpeg_quality, "JPEG quality")->check(CLI::Range(1, 100));
    sub->add_option("--class-names", a->class_names_file, "File of class names");
    sub->callback([a, so] {
      if (!a->inputs.empty()) throw ConfigError("synthetic takes no --input");
      so->class_names = a->class_names();
      convert::SyntheticSource src(*so);
      run(src, a->options(), a->json);
    });
  }
}

}  // namespace fastnn::cli
