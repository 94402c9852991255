#include "core/tf_checkpoint/tf_checkpoint.h"

#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>

#include "core/check.h"
#include "core/input_file.h"
#include "core/tf_checkpoint/bundle_reader.h"
#include "core/tf_checkpoint/slices_reader.h"
#include "schemas/checkpoint_meta.pb.h"

namespace fastnn::tf_checkpoint {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxStateFileBytes = 1 << 20;  // TensorFlow's `checkpoint` file: a few lines

bool is_file(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Whether `p` is a regular file ending in the table magic (read: its last 8 bytes only).
bool is_table_file(const std::string& p) {
  if (!is_file(p)) return false;
  InputFile f(p);
  if (f.size() < kTableFooterBytes) return false;
  char tail[kTableFooterBytes];
  const off_t at = static_cast<off_t>(f.size() - kTableFooterBytes);
  if (::pread(f.fd(), tail, sizeof tail, at) != static_cast<ssize_t>(sizeof tail)) throw_io_error(p, "read");
  return Table::has_magic(std::string_view(tail, sizeof tail));
}

std::optional<TfCheckpointPath> v2_at(const std::string& prefix) {
  if (!is_table_file(bundle_index_path(prefix))) return std::nullopt;
  return TfCheckpointPath{TfFormat::kV2, prefix, {bundle_index_path(prefix)}};
}

std::string shard_name(const std::string& prefix, int i, int n) {
  char b[32];
  std::snprintf(b, sizeof b, "-%05d-of-%05d", i, n);
  return prefix + b;
}

std::optional<TfCheckpointPath> v1_shards(const std::string& prefix, int n) {
  if (n < 1 || !is_table_file(shard_name(prefix, 0, n))) return std::nullopt;
  TfCheckpointPath p{TfFormat::kV1, prefix, {}};
  for (int i = 0; i < n; ++i) p.files.push_back(shard_name(prefix, i, n));
  return p;
}

std::optional<TfCheckpointPath> find_file_or_prefix(const std::string& path) {
  if (auto v2 = v2_at(path)) return v2;
  static const std::regex v2_file(R"((.*)\.(index|meta|data-\d{5}-of-\d{5}))");
  static const std::regex v1_shard(R"((.*)-(\d{5}|\?{5})-of-(\d{5}))");
  std::smatch m;
  if (std::regex_match(path, m, v2_file))
    if (auto v2 = v2_at(m[1].str())) return v2;
  if (std::regex_match(path, m, v1_shard)) return v1_shards(m[1].str(), std::stoi(m[3].str()));
  if (is_table_file(path)) return TfCheckpointPath{TfFormat::kV1, path, {path}};
  // A sharded V1 checkpoint named by its prefix: look for the first shard.
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (is_file(path) || !fs::is_directory(dir, ec)) return std::nullopt;
  static const std::regex shard0(R"((.*)-00000-of-(\d{5}))");
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::smatch g;
    if (std::regex_match(name, g, shard0) && g[1].str() == p.filename().string())
      return v1_shards(path, std::stoi(g[2].str()));
  }
  return std::nullopt;
}

}  // namespace

std::optional<TfCheckpointPath> find_tf_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return find_file_or_prefix(path);
  const std::string state = (fs::path(path) / "checkpoint").string();
  if (!is_file(state)) return std::nullopt;
  // TensorFlow's CheckpointState and fastnn's CheckpointIndex share their first two fields.
  fastnn::CheckpointIndex index;
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);
  if (!parser.ParseFromString(read_regular_file(state, kMaxStateFileBytes), &index) ||
      index.model_checkpoint_path().empty())
    return std::nullopt;
  const fs::path named(index.model_checkpoint_path());
  return find_file_or_prefix((named.is_absolute() ? named : fs::path(path) / named).string());
}

std::string TfCheckpoint::describe() const {
  if (path.format == TfFormat::kV2)
    return str("TensorFlow V2 checkpoint ", path.prefix, " (index + ", path.files.size() - 1, " data file",
               path.files.size() == 2 ? "" : "s", ")");
  return path.files.size() == 1 ? str("TensorFlow V1 checkpoint ", path.prefix)
                                : str("TensorFlow V1 checkpoint ", path.prefix, " (", path.files.size(), " files)");
}

TfCheckpoint open_tf_checkpoint(const TfCheckpointPath& path, const TableLimits& limits) {
  TfCheckpoint c{path, nullptr};
  if (path.format == TfFormat::kV2) {
    auto r = BundleReader::open(path.prefix, limits);
    c.path.files = {bundle_index_path(path.prefix)};
    for (int s = 0; s < r->num_shards(); ++s) c.path.files.push_back(bundle_data_path(path.prefix, s, r->num_shards()));
    c.tensors = std::move(r);
  } else {
    c.tensors = SlicesReader::open(path.files, limits);
  }
  return c;
}

}  // namespace fastnn::tf_checkpoint
