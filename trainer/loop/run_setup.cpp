#include "trainer/loop/run_setup.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/dataset_files.h"
#include "core/logging.h"
#include "pipeline/preprocess.h"
#include "trainer/config/job_config.h"
#include "trainer/graph/net_plan.h"
#include "trainer/head/head_config.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {
namespace {

pipeline::DatasetOptions dataset_options(const JobConfig& c, int rank = 0) {
  pipeline::DatasetOptions o;
  o.deterministic = true;  // ordered delivery costs little and makes --resume exact
  // More pipeline threads than cores only steal time from the training kernels.
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.num_threads = std::clamp(c.num_preprocessing_threads(), 1, hw);
  o.seed = rank_seed(static_cast<uint64_t>(c.seed()), rank);
  return o;
}

pipeline::DatasetOptions dataset_options(const RunSetup& s, const JobConfig& c, int rank = 0) {
  pipeline::DatasetOptions o = dataset_options(c, rank);
  o.allocator = s.batch.allocator;  // pinned host memory when the runner copies batches to a GPU
  o.num_classes = s.num_classes;    // a label outside the model's classes names its shard and record
  // The CUDA runner's three stages each keep the batch they copied until they are reused (the step on
  // the device, the one queued behind it, the prefetched one), while the loop fetches the next.
  if (s.batch.allocator) o.max_held_batches = 4;
  return o;
}

std::shared_ptr<pipeline::SampleMapper> make_mapper(const RunSetup& s, bool train) {
  return pipeline::make_preprocessor(preprocess_config(s, train));
}

pipeline::Dataset batched_eval(pipeline::Dataset ds, const RunSetup& s, const JobConfig& c, int batch_size) {
  ds.repeat(1)
      .map_and_batch(make_mapper(s, false), batch_size, std::max(1, c.num_parallel_batches()), false)
      .prefetch(std::max(1, c.prefetch_buffer_size()))
      .with_options(dataset_options(s, c));
  return ds;
}

// FastNN's train_files / eval_files: comma-separated file names inside dataset_dir (or absolute
// paths), read in the order given; an item with a wildcard is a glob (core/dataset_files.h: its
// matches sorted). Record counts and class histograms come from the manifest when it lists the file;
// counts otherwise from reading the file once (length CRCs).
pipeline::FileList named_files(const JobConfig& c, const char* field, const std::vector<std::string>& items,
                               const Manifest& m) {
  std::vector<std::string> paths;
  std::vector<int64_t> counts;
  std::vector<std::vector<uint64_t>> histograms;
  for (const std::string& name : items) {
    std::vector<std::string> matched;
    if (has_wildcard(name)) {
      matched = match_files(name, c.dataset_dir());
      if (matched.empty()) throw ConfigError(str(field, ": ", name, " matches no file in ", c.dataset_dir()));
    } else {
      matched.push_back(std::filesystem::path(name).is_absolute()
                            ? name
                            : (std::filesystem::path(c.dataset_dir()) / name).string());
    }
    for (const std::string& f : matched) {
      const std::filesystem::path p(f);
      if (!std::filesystem::is_regular_file(p)) throw ConfigError(str(field, ": ", p.string(), " is not a file"));
      int64_t records = -1;
      std::vector<uint64_t> histogram;
      for (const SplitInfo& split : m.splits)
        for (const ShardInfo& shard : split.shards)
          if (std::filesystem::path(c.dataset_dir()) / shard.file == p) {
            records = static_cast<int64_t>(shard.records);
            histogram = shard.label_histogram;
          }
      paths.push_back(p.string());
      counts.push_back(records);
      histograms.push_back(std::move(histogram));
    }
  }
  if (paths.empty()) throw ConfigError(str(field, " names no file"));
  pipeline::FileList list = pipeline::file_list_from_paths(std::move(paths), std::move(counts));
  for (size_t i = 0; i < histograms.size(); ++i) list.files[i].label_histogram = std::move(histograms[i]);
  list.name = str(field, " (", list.name, ")");
  pipeline::count_records(&list);
  return list;
}

// FastNN's file_pattern with %s = split, as one train_files-style item; nullopt when it matches nothing.
std::optional<pipeline::FileList> pattern_files(const JobConfig& c, const std::string& split, const Manifest& m) {
  const std::string pattern = substitute_split(c.file_pattern(), split);
  if (match_files(pattern, c.dataset_dir()).empty()) return std::nullopt;
  return named_files(c, str("file_pattern ", pattern).c_str(), {pattern}, m);
}

}  // namespace

pipeline::MixOptions mix_options(const JobConfig& c) {
  pipeline::MixOptions m;
  m.mixup_alpha = c.mixup_alpha();
  m.cutmix_alpha = c.cutmix_alpha();
  m.prob = c.mixup_prob();
  m.switch_prob = c.mixup_switch_prob();
  m.off_epoch = c.mixup_off_epoch();
  m.mode = pipeline::mix_mode_from_name(c.mixup_mode());
  pipeline::check_mix_options(m);
  return m;
}

pipeline::PreprocessConfig preprocess_config(const RunSetup& s, bool train) {
  pipeline::PreprocessConfig p;
  p.preset = s.preset;
  apply_preset_fields(s.preset_fields, p);
  p.label_offset = s.labels_offset;
  p.train = train;
  p.color_distortion = train && s.color_distortion;
  if (train) p.erase = s.erase;
  if (train) p.auto_augment = s.auto_augment;
  p.height = s.height;
  p.width = s.width;
  p.channels = s.channels;
  p.dtype = s.batch.dtype;
  p.layout = s.batch.layout;
  return p;
}

std::vector<std::string> files_in_both(const pipeline::FileList& train, const pipeline::FileList& eval) {
  std::set<std::pair<uint64_t, uint64_t>> trained;
  struct stat st;
  for (const pipeline::ShardFile& f : train.files)
    if (::stat(f.path.c_str(), &st) == 0) trained.insert({st.st_dev, st.st_ino});
  std::vector<std::string> both;
  for (const pipeline::ShardFile& f : eval.files)
    if (::stat(f.path.c_str(), &st) == 0 && trained.count({st.st_dev, st.st_ino})) both.push_back(f.path);
  return both;
}

namespace {

// The class map of the run's data (run_setup.h): dataset_dir's first, then every other folder the train
// and eval files come from, each compared with the first that has one.
std::optional<ClassMap> data_class_map(const JobConfig& c, const RunSetup& s) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, fs::path>> folders = {{"dataset_dir", c.dataset_dir()}};
  for (const auto& [role, list] : {std::pair{"train files", &s.train_files}, std::pair{"eval files", &s.eval_files}})
    for (const pipeline::ShardFile& f : list->files) folders.push_back({role, fs::path(f.path).parent_path()});
  std::set<fs::path> seen;
  std::optional<ClassMap> first;
  for (const auto& [role, folder] : folders) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(folder.empty() ? "." : folder, ec);
    if (ec) key = folder;
    if (!seen.insert(key).second) continue;
    std::optional<ClassMap> map = read_folder_class_map(folder.string());
    if (map) map = without_first_classes(*map, c.labels_offset());
    if (!map) continue;
    if (!first) first = std::move(map);
    else require_same_classes(*first, *map, str(role, " in ", folder.string()), kClassMapAdvice);
  }
  return first;
}

}  // namespace

std::string run_directory(const JobConfig& c) {
  if (!c.output_dir().empty()) return c.output_dir();
  if (!c.model_dir().empty() && c.task_type() != "finetune") return c.model_dir();
  // Never the current directory unless asked (output_dir=.): a fixed name, not a timestamp, so every
  // rank of a data-parallel job agrees on it, eval finds it, and running the same command again
  // continues the run (or is refused, naming the field that changed: run_directory.h).
  return "runs/" + model_label(c);
}

std::string eval_run_directory(const JobConfig& c) {
  const bool named = !c.output_dir().empty() || (!c.model_dir().empty() && c.task_type() != "finetune") ||
                     c.has_model_name() || c.has_net();
  if (named) return run_directory(c);
  // `fastnn eval --dataset_dir D` after `fastnn train --model_name M --dataset_dir D`: the run is
  // runs/M, and the model comes from its checkpoint; take it when it is the only run there.
  std::vector<std::string> runs;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("runs", ec))
    if (e.is_directory()) runs.push_back(e.path().string());
  std::sort(runs.begin(), runs.end());
  if (runs.size() == 1) return runs[0];
  std::string listed;
  for (const std::string& r : runs) listed += (listed.empty() ? "" : ", ") + r;
  throw ConfigError(str("which run? name it with --output_dir (or --model_name, or --checkpoint): ",
                        runs.empty() ? "there is no runs/ folder here" : "runs/ holds " + listed));
}

zoo::ZooOptions model_zoo_options(const JobConfig& c, int outputs, int height, int width, int channels) {
  return {.num_classes = outputs, .height = height, .width = width, .channels = channels,
          .aux_logits = c.aux_logits(),
          .drop_path_keep_prob = c.has_drop_path_keep_prob() ? c.drop_path_keep_prob() : -1,
          .total_training_steps = c.has_total_training_steps() ? c.total_training_steps() : -1,
          .batch_norm_decay = c.has_batch_norm_decay() ? c.batch_norm_decay() : -1,
          .batch_norm_epsilon = c.has_batch_norm_epsilon() ? c.batch_norm_epsilon() : -1};
}

std::string model_label(const JobConfig& c) {
  if (!c.has_net() || c.has_model_name()) return c.model_name();
  return c.net().name().empty() ? "net" : c.net().name();
}

std::string preset_for_model(const std::string& m) {
  for (const zoo::ZooModel& z : zoo::zoo_models())
    if (z.name == m) return z.preset;
  return "inception";  // not a zoo name (a net {} of its own): TF-slim's most common preset
}

RunSetup make_run_setup(const JobConfig& c, bool for_training) {
  // A misspelt model is named (with did-you-mean) before anything about the data: the flag typed last.
  if (c.has_model_name() && !c.has_net()) zoo::zoo_model(c.model_name());
  if (c.dataset_dir().empty()) throw ConfigError("dataset_dir is not set: give the folder of a `fastnn convert` output");
  RunSetup s;
  s.run_dir = run_directory(c);
  // Without train_files or file_pattern the manifest is required (read_manifest says so when it is
  // missing). Precedence for each split: train_files / eval_files, then file_pattern, then the manifest.
  const bool have_manifest = std::filesystem::exists(std::filesystem::path(c.dataset_dir()) / "manifest.json");
  const bool by_pattern = !c.file_pattern().empty();
  if (have_manifest || (c.train_files().empty() && !by_pattern)) s.manifest = read_manifest(c.dataset_dir());
  if (!c.train_files().empty()) {
    s.train_files = named_files(c, "train_files", split_list(c.train_files()), s.manifest);
  } else if (by_pattern) {
    std::optional<pipeline::FileList> train = pattern_files(c, "train", s.manifest);
    if (!train)
      throw ConfigError(str("file_pattern: ", substitute_split(c.file_pattern(), "train"), " matches no file in ",
                            c.dataset_dir()));
    s.train_files = std::move(*train);
  } else {
    // TF-slim's dataset_split_name: the split `fastnn train` reads (evaluate_checkpoint reads it as the
    // split to evaluate instead).
    const std::string split = c.has_dataset_split_name() ? c.dataset_split_name() : "train";
    if (!s.manifest.find_split(split) && for_training) {
      std::string have;
      for (const SplitInfo& si : s.manifest.splits) have += (have.empty() ? "" : ", ") + si.name;
      throw ConfigError(str(c.dataset_dir(), "/manifest.json has no ", split, " split (it has: ", have, ")"));
    }
    if (s.manifest.find_split(split)) s.train_files = pipeline::file_list_from_manifest(c.dataset_dir(), split);
  }
  if (!c.eval_files().empty()) {
    s.eval_files = named_files(c, "eval_files", split_list(c.eval_files()), s.manifest);
    s.eval_split = "eval_files";
  } else if (by_pattern) {
    for (const char* split : {"validation", "test"}) {
      if (std::optional<pipeline::FileList> files = pattern_files(c, split, s.manifest)) {
        s.eval_files = std::move(*files);
        s.eval_split = split;
        break;
      }
    }
  } else if (have_manifest && s.manifest.find_split("validation")) {
    s.eval_split = "validation";
  } else if (have_manifest && s.manifest.find_split("test")) {
    s.eval_split = "test";
  }
  if ((s.eval_split == "validation" || s.eval_split == "test") && s.eval_files.files.empty())
    s.eval_files = pipeline::file_list_from_manifest(c.dataset_dir(), s.eval_split);
  s.eval_files_also_trained = files_in_both(s.train_files, s.eval_files);
  if (!s.eval_files_also_trained.empty()) {
    const std::vector<std::string>& both = s.eval_files_also_trained;
    log_warn("the evaluation (", s.eval_split, ") is not held out: ", both.size(), " of its ", s.eval_files.files.size(),
             " file(s) are also training files (", both.front(), both.size() > 1 ? ", ..." : "",
             "); name the training files so that they leave the evaluation's out (train_files, eval_files)");
  }
  s.labels_offset = c.labels_offset();
  s.classes = data_class_map(c, s);
  s.model_name = model_label(c);
  // No manifest: TF-slim's labels.txt gives the class count (less labels_offset, as TF-slim's
  // num_classes - labels_offset).
  std::optional<std::vector<std::string>> labels;
  if (!have_manifest) labels = read_labels_in(c.dataset_dir());
  if (!c.has_num_classes() && !have_manifest && !labels)
    throw ConfigError(str("num_classes is not set and ", c.dataset_dir(),
                          " has neither manifest.json nor labels.txt to read it from"));
  if (c.has_num_classes()) {
    s.num_classes = c.num_classes();
  } else if (have_manifest) {
    s.num_classes = static_cast<int64_t>(s.manifest.num_classes());
  } else {
    const int64_t n = static_cast<int64_t>(labels->size()) - c.labels_offset();
    if (n < 1)
      throw ConfigError(str(c.dataset_dir(), "/labels.txt names ", labels->size(), " classes, labels_offset is ",
                            c.labels_offset(), ": no class is left"));
    s.num_classes = n;
  }
  if (c.has_net()) {  // the config's own layers replace the zoo net (schemas/net.proto)
    if (c.has_train_image_size())
      throw ConfigError("train_image_size sets a zoo model's input; with net, set net { input { height width } }");
    const InputDef& in = c.net().input();
    s.height = in.height();
    s.width = in.width();
    s.channels = in.channels();
    if (s.height < 1 || s.width < 1 || s.channels < 1)
      throw ConfigError("net: input needs channels, height and width (net { input { channels: 1 height: 28 width: 28 } })");
  } else {
    const zoo::ZooModel& model = zoo::zoo_model(s.model_name);
    // TF-slim's train_image_size: a reduced size (MobileNet v2 at 32 on Fashion-MNIST); build_net
    // checks it against the model's smallest size.
    s.height = s.width = c.has_train_image_size() ? c.train_image_size() : model.default_size;
    s.channels = model.default_channels;
  }
  s.preset = c.preprocessing_name().empty() ? preset_for_model(s.model_name) : c.preprocessing_name();
  s.preset_fields = preset_fields(c);
  s.color_distortion = c.color_distortion();
  s.erase.prob = static_cast<float>(c.random_erase_prob());
  s.erase.mode = pipeline::parse_erase_mode(c.random_erase_mode());
  s.auto_augment.policy = pipeline::parse_auto_augment(c.auto_augment());
  s.auto_augment.num_ops = c.auto_augment_num_ops();
  s.auto_augment.magnitude = c.auto_augment_magnitude();
  s.auto_augment.magnitude_bins = c.auto_augment_magnitude_bins();
  s.mix = mix_options(c);
  {
    const pipeline::OutputFormat f = pipeline::output_format(pipeline::resolve_preset(preprocess_config(s, true)));
    std::copy(f.mean, f.mean + 4, s.input.mean);
    std::copy(f.inv_std, f.inv_std + 4, s.input.inv_std);
  }
  s.samples_per_epoch = c.has_num_sample_per_epoch() ? c.num_sample_per_epoch()
                                                     : static_cast<int64_t>(s.train_files.total_records());
  head::check_head_config(c);
  const auto outputs = static_cast<int>(head::net_outputs(c, s.num_classes));  // a head's embedding, or the classes
  s.net = c.has_net() ? c.net() : zoo::build_net(s.model_name, model_zoo_options(c, outputs, s.height, s.width, s.channels));
  if (head::uses_head(c)) s.net = head::with_embedding(std::move(s.net));
  if (c.has_net() && !head::uses_head(c)) {  // its logits layer fixes the classes: the data's must agree
    const int64_t net_classes = graph::NetPlan::make(s.net, {}).num_classes();
    if (net_classes != s.num_classes)
      throw ConfigError(str("net: the logits layer has ", net_classes, " units, and ",
                            c.has_num_classes() ? "num_classes is " : "the dataset has ", s.num_classes,
                            " classes; make them agree"));
  }
  if (c.has_prefetch_buffer_size() && c.prefetch_buffer_size() == 0)
    log_warn("prefetch_buffer_size=0 is raised to 1: the pipeline always prepares the next batch");
  if (c.has_dataset_name() && have_manifest && c.dataset_name() != s.manifest.dataset)
    log_warn("dataset_name=", c.dataset_name(), " has no effect: fastnn reads the records by their Example keys, and ",
             c.dataset_dir(), "/manifest.json says the shards are ", s.manifest.dataset, " data");
  else if (c.has_dataset_name() && !have_manifest)
    log_warn("dataset_name=", c.dataset_name(), " has no effect: fastnn reads the records by their Example keys, and "
             "there is no manifest.json to check the name against");
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (c.has_num_preprocessing_threads() && c.num_preprocessing_threads() > hw)
    log_warn("num_preprocessing_threads=", c.num_preprocessing_threads(), " is more than this machine's ", hw,
             " cores; the pipeline uses ", hw, " (more only steal time from the training kernels)");
  return s;
}

std::optional<head::HeadOptions> head_for(const JobConfig& c, const RunSetup& s) {
  if (!head::uses_head(c)) return std::nullopt;
  return head::head_options(c, s.num_classes, static_cast<uint64_t>(c.seed()));
}

void copy_head_fields(const JobConfig& given, const JobConfig& saved, JobConfig& out) {
  // Reflection copies one field without a line per field: each is copied only where `given` left it unset.
  const google::protobuf::Reflection* r = JobConfig::GetReflection();
  for (const char* name : {"loss_type", "emb_dim", "margin", "scale", "margin1", "margin2", "margin3", "easy_margin",
                           "sample_ratio"}) {
    const google::protobuf::FieldDescriptor* f = JobConfig::descriptor()->FindFieldByName(name);
    FASTNN_CHECK(f != nullptr, "JobConfig has no field ", name);
    if (r->HasField(given, f) || !r->HasField(saved, f)) continue;
    JobConfig one = saved;
    r->SwapFields(&one, &out, {f});
  }
}

pipeline::Dataset make_train_dataset(const RunSetup& s, const JobConfig& c, int rank, int world) {
  auto ds = pipeline::Dataset::from_file_list(s.train_files);
  ds.shard(rank, world);
  const auto files = static_cast<int>(ds.plan().files.size());
  ds.interleave(std::clamp(files, 1, kMaxTrainFilesOpen), 1);
  if (c.datasets_use_caching()) ds.cache();
  if (c.class_balanced_sampling()) {
    try {
      ds.balance_classes(rank_seed(static_cast<uint64_t>(c.seed()), rank));
    } catch (const ConfigError& e) {
      throw ConfigError(str("class_balanced_sampling: ", e.what()));
    }
  }
  if (c.shuffle_buffer_size() > 1)
    ds.shuffle(static_cast<size_t>(c.shuffle_buffer_size()), rank_seed(static_cast<uint64_t>(c.seed()), rank));
  pipeline::DatasetOptions options = dataset_options(s, c, rank);
  options.mix = s.mix;
  options.mix_parts = std::max(1, c.gradient_accumulation_steps());  // each accumulated part mixed on its own
  ds.repeat(-1)
      .map_and_batch(make_mapper(s, true), step_batch_size(c), std::max(1, c.num_parallel_batches()), true)
      .prefetch(std::max(1, c.prefetch_buffer_size()))
      .with_options(options);
  return ds;
}

pipeline::Dataset make_eval_dataset(const RunSetup& s, const JobConfig& c, int batch_size) {
  FASTNN_CHECK(!s.eval_split.empty(), "the dataset has no held-out split to evaluate on");
  return batched_eval(pipeline::Dataset::from_file_list(s.eval_files), s, c, batch_size);
}

std::optional<pipeline::Dataset> make_eval_shard(const RunSetup& s, const JobConfig& c, int batch_size, int rank,
                                                 int world) {
  FASTNN_CHECK(!s.eval_split.empty(), "the dataset has no held-out split to evaluate on");
  const pipeline::FileList& all = s.eval_files;
  std::vector<std::string> paths;
  std::vector<int64_t> counts;
  for (size_t i = static_cast<size_t>(rank); i < all.files.size(); i += static_cast<size_t>(world)) {
    paths.push_back(all.files[i].path);
    counts.push_back(all.files[i].records);
  }
  if (paths.empty()) return std::nullopt;
  return batched_eval(pipeline::Dataset::from_files(std::move(paths), std::move(counts)), s, c, batch_size);
}

int64_t total_train_steps(const JobConfig& c, int64_t batches_per_epoch) {
  // Overflow-checked: a manifest or flag cannot make the step count wrap (core/checked_math.h).
  const int64_t by_epochs = checked_mul(static_cast<int64_t>(std::max(0, c.num_epochs())), batches_per_epoch,
                                        "num_epochs x batches per epoch");
  if (c.has_stop_at_step() && c.has_num_epochs()) return std::min(c.stop_at_step(), by_epochs);
  if (c.has_stop_at_step()) return c.stop_at_step();
  if (c.has_num_epochs()) return by_epochs;
  return std::min(c.stop_at_step(), by_epochs);
}

bool has_hook(const JobConfig& c, const std::string& hook) {
  for (const std::string& h : split_list(c.hooks()))
    if (h == hook) return true;
  return false;
}

}  // namespace fastnn::loop
