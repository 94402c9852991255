// Checkpoint names, metadata text, completeness and loading (the read side of checkpoint_manager.h).
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/input_file.h"
#include "core/crc32c.h"
#include "core/tf_checkpoint/tf_checkpoint.h"
#include "trainer/checkpoint/checkpoint_internal.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/row_shards.h"

namespace fastnn::checkpoint {
namespace {

constexpr std::string_view kWeightsSuffix = ".weights.safetensors";
constexpr std::string_view kOptimizerSuffix = ".optimizer.safetensors";
constexpr std::string_view kMetaSuffix = ".meta.pbtxt";

class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty()) first = str(line + 1, ":", column + 1, ": ", message);
  }
  std::string first;
};

template <typename Message>
void parse_text(const std::string& text, const std::string& source, Message* out) {
  TextErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, out))
    throw FormatError(str(source, ":", errors.first.empty() ? " not valid text format" : errors.first));
}

void verify_file(const SafetensorsFile& f, const CheckpointFile& rec, const std::string& meta_file) {
  if (f.size_bytes() != rec.size_bytes())
    throw FormatError(str(f.name(), ": ", f.size_bytes(), " bytes, but ", meta_file, " records ", rec.size_bytes(),
                          " (the file changed after the checkpoint was written)"));
  const uint32_t crc = crc32c(f.bytes());
  if (crc != rec.crc32c())
    throw FormatError(str(f.name(), ": CRC32C 0x", std::hex, crc, " does not match 0x", rec.crc32c(), std::dec,
                          " recorded in ", meta_file, " (the file changed after the checkpoint was written)"));
  if (rec.has_num_arrays() && static_cast<int64_t>(f.arrays().size()) != rec.num_arrays())
    throw FormatError(str(f.name(), ": ", f.arrays().size(), " tensors, but ", meta_file, " records ", rec.num_arrays()));
}

}  // namespace

std::string checkpoint_prefix(const std::string& dir, int64_t step) {
  return (std::filesystem::path(dir) / str("ckpt-", step)).string();
}
std::string weights_path(const std::string& prefix) { return prefix + std::string(kWeightsSuffix); }
std::string optimizer_path(const std::string& prefix) { return prefix + std::string(kOptimizerSuffix); }
std::string meta_path(const std::string& prefix) { return prefix + std::string(kMetaSuffix); }

std::optional<int64_t> parse_checkpoint_name(const std::string& name, std::string* suffix) {
  if (!name.starts_with("ckpt-")) return std::nullopt;
  const char* begin = name.data() + 5;
  const char* end = name.data() + name.size();
  const char* p = begin;
  while (p < end && *p >= '0' && *p <= '9') ++p;
  if (p == begin || (*begin == '0' && p - begin > 1)) return std::nullopt;  // digits, canonical
  int64_t step = 0;
  const auto r = std::from_chars(begin, p, step);
  if (r.ec != std::errc() || r.ptr != p) return std::nullopt;
  const std::string_view rest(p, static_cast<size_t>(end - p));
  if (!rest.empty() && rest != kWeightsSuffix && rest != kOptimizerSuffix && rest != kMetaSuffix &&
      !parse_shard_suffix(rest))
    return std::nullopt;
  if (suffix) *suffix = std::string(rest);
  return step;
}

std::string checkpoint_meta_to_text(const CheckpointMeta& meta) {
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(meta, &out);
  return "# fastnn checkpoint metadata: fastnn.CheckpointMeta (schemas/checkpoint_meta.proto), text format\n" + out;
}

CheckpointMeta parse_checkpoint_meta(const std::string& text, const std::string& source) {
  CheckpointMeta meta;
  parse_text(text, source, &meta);
  return meta;
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  return parse_checkpoint_meta(internal::read_small_file(path, kMaxCheckpointMetaBytes), path);
}

namespace internal {

std::string read_small_file(const std::string& path, size_t max_bytes) {
  return read_regular_file(path, max_bytes);  // a FIFO or folder is refused, not waited on
}

bool is_complete(const std::string& prefix) {
  CheckpointMeta meta;
  try {
    meta = read_checkpoint_meta(meta_path(prefix));
  } catch (const Error&) {
    return false;
  }
  for (const auto& [path, rec] : {std::pair{weights_path(prefix), &meta.weights_file()},
                                  std::pair{optimizer_path(prefix), &meta.optimizer_file()}}) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (static_cast<uint64_t>(st.st_size) != rec->size_bytes()) return false;
  }
  try {
    verify_row_shard_files(prefix, meta, meta_path(prefix), /*crc=*/false);
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::vector<std::string> shard_names_of_step(const std::string& dir, int64_t step) {
  std::vector<std::string> out;
  for (const std::string& name : list_entry_names(dir)) {
    std::string suffix;
    if (parse_checkpoint_name(name, &suffix) == step && parse_shard_suffix(suffix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<CheckpointInfo> list_complete(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  for (const std::string& name : list_entry_names(dir)) {
    std::string suffix;
    const auto step = parse_checkpoint_name(name, &suffix);
    if (!step || suffix != kMetaSuffix) continue;
    const std::string prefix = checkpoint_prefix(dir, *step);
    if (is_complete(prefix)) out.push_back({*step, prefix});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointInfo> latest_complete(const std::string& dir) {
  const auto all = list_complete(dir);
  if (all.empty()) return std::nullopt;
  const std::string index = (std::filesystem::path(dir) / kIndexName).string();
  try {
    CheckpointIndex idx;
    parse_text(read_small_file(index, kMaxCheckpointMetaBytes), index, &idx);
    std::string suffix;
    const auto step = parse_checkpoint_name(idx.model_checkpoint_path(), &suffix);
    if (step && suffix.empty())
      for (const auto& c : all)
        if (c.step == *step) return c;
  } catch (const Error&) {
    // No index, or an unreadable one: the highest complete step is the latest.
  }
  return all.back();
}

}  // namespace internal

std::vector<std::string> list_entry_names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    throw IoError(str(dir, ": cannot list: ", ec.message()));
  }
  for (const auto& entry : it) out.push_back(entry.path().filename().string());
  return out;
}

std::vector<std::string> checkpoint_file_paths(const std::string& prefix) {
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : prefix.substr(0, slash);
  const std::optional<int64_t> step = parse_checkpoint_name(prefix.substr(slash == std::string::npos ? 0 : slash + 1));
  std::vector<std::string> out;
  if (!step) return out;
  for (const std::string& name : list_entry_names(dir))
    if (parse_checkpoint_name(name) == step) out.push_back(dir + "/" + name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<CheckpointInfo> list_committed_latest_first(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  for (const std::string& name : list_entry_names(dir)) {
    std::string suffix;
    const auto step = parse_checkpoint_name(name, &suffix);
    if (step && suffix == kMetaSuffix) out.push_back({*step, checkpoint_prefix(dir, *step)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  const std::string index = (std::filesystem::path(dir) / internal::kIndexName).string();
  try {
    CheckpointIndex idx;
    parse_text(internal::read_small_file(index, kMaxCheckpointMetaBytes), index, &idx);
    std::string suffix;
    const auto step = parse_checkpoint_name(idx.model_checkpoint_path(), &suffix);
    auto named = std::find_if(out.begin(), out.end(), [&](const auto& c) { return step && suffix.empty() && c.step == *step; });
    if (named != out.end()) std::rotate(out.begin(), named, named + 1);
  } catch (const Error&) {
    // No index, or an unreadable one: the highest step is the latest.
  }
  return out;
}

std::string checkpoint_damage(const std::string& prefix, bool optimizer) {
  try {
    load_checkpoint(prefix, {.optimizer = optimizer, .verify = true});
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

std::vector<std::string> set_aside_checkpoint(const std::string& prefix) {
  std::vector<std::string> moved, paths = {meta_path(prefix), weights_path(prefix), optimizer_path(prefix)};
  // Every shard file of the step, listed by the meta or not: none may be taken for a later save's.
  const std::filesystem::path p(prefix);
  if (const auto step = parse_checkpoint_name(p.filename().string())) {
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
    for (const std::string& name : internal::shard_names_of_step(dir, *step)) paths.push_back((std::filesystem::path(dir) / name).string());
  }
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) continue;
    std::string to = path + ".damaged";
    for (int n = 2; std::filesystem::exists(std::filesystem::symlink_status(to, ec)); ++n) to = str(path, ".damaged-", n);
    if (std::rename(path.c_str(), to.c_str()) != 0) throw_io_error(path, str("rename to ", to));
    moved.push_back(to);
  }
  return moved;
}

LoadedCheckpoint load_checkpoint(const std::string& path_or_prefix, const CheckpointLoadOptions& options) {
  std::string prefix = path_or_prefix;
  std::error_code ec;
  if (std::filesystem::is_directory(path_or_prefix, ec)) {
    // The latest committed checkpoint, damaged or not: a damaged one is an error, never skipped.
    const std::vector<CheckpointInfo> all = list_committed_latest_first(path_or_prefix);
    if (all.empty()) throw ConfigError(str(path_or_prefix, ": no complete checkpoint in this directory"));
    try {
      return load_checkpoint(all.front().prefix, options);
    } catch (const Error& e) {
      std::string good = "none";
      for (size_t i = 1; i < all.size(); ++i)
        if (checkpoint_damage(all[i].prefix, options.optimizer).empty()) {
          good = all[i].prefix;
          break;
        }
      throw FormatError(str("the latest checkpoint ", all.front().prefix, " is damaged: ", e.what(),
                            "; the last good checkpoint is ", good));
    }
  } else {
    std::string suffix;
    if (parse_checkpoint_name(std::filesystem::path(prefix).filename().string(), &suffix)) {
      prefix.resize(prefix.size() - suffix.size());
    } else {
      for (std::string_view s : {kWeightsSuffix, kOptimizerSuffix, kMetaSuffix})
        if (prefix.ends_with(s)) {
          prefix.resize(prefix.size() - s.size());
          break;
        }
    }
  }
  const std::string meta_file = meta_path(prefix);
  if (!std::filesystem::exists(meta_file, ec) && tf_checkpoint::find_tf_checkpoint(path_or_prefix))
    throw ConfigError(str(path_or_prefix, " is a TensorFlow checkpoint: it can start a training run (checkpoint_path, "
                          "docs/TRAINING.md), and `fastnn inspect` lists it; this command reads fastnn's own checkpoints"));
  if (!std::filesystem::exists(meta_file, ec) && !std::filesystem::exists(path_or_prefix, ec) &&
      !std::filesystem::exists(weights_path(prefix), ec))
    throw ConfigError(str(path_or_prefix, ": no such run directory or checkpoint (give a run directory, a checkpoint "
                          "prefix such as <dir>/ckpt-1000, or one of its files)"));
  if (!std::filesystem::exists(meta_file, ec))
    throw ConfigError(str(meta_file, ": no such checkpoint metadata (is '", path_or_prefix,
                          "' a checkpoint prefix such as <dir>/ckpt-1000, one of its files, or a directory?)"));
  LoadedCheckpoint ck{prefix, read_checkpoint_meta(meta_file), SafetensorsFile::open(weights_path(prefix), options.limits),
                      std::nullopt};
  validate_row_shards(ck.meta, meta_file);
  if (options.verify) verify_file(ck.weights, ck.meta.weights_file(), meta_file);
  if (options.optimizer) {
    ck.optimizer = SafetensorsFile::open(optimizer_path(prefix), options.limits);
    if (options.verify) verify_file(*ck.optimizer, ck.meta.optimizer_file(), meta_file);
  }
  if (options.verify) verify_row_shard_files(prefix, ck.meta, meta_file, options.verify_shards, options.limits);
  return ck;
}

}  // namespace fastnn::checkpoint
