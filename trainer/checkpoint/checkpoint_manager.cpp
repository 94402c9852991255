// CheckpointManager: atomic save, retention, the index, and the writer lock.
#include "trainer/checkpoint/checkpoint_manager.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <google/protobuf/text_format.h>

#include "core/atomic_output.h"
#include "core/check.h"
#include "trainer/checkpoint/checkpoint_internal.h"
#include "trainer/checkpoint/row_shards.h"

namespace fastnn::checkpoint {
namespace {

constexpr std::string_view kTempSuffix = ".fastnn-tmp";

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string temp_path_for(const std::string& dir, const std::string& final_path) {
  return (std::filesystem::path(dir) / OutputDir::temp_name(base_name(final_path))).string();
}

void write_text_file(const std::string& path, const std::string& text, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_io_error(path, "create");
  const char* p = text.data();
  size_t n = text.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      const int e = errno;
      ::close(fd);
      errno = e;
      throw_io_error(path, "write");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  if (sync && ::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    throw_io_error(path, "fsync");
  }
  if (::close(fd) != 0) throw_io_error(path, "close");
}

void rename_file(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) throw_io_error(from, str("rename to ", to));
}

// Removes `path`; a file that is already gone is fine.
void remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_io_error(path, "remove");
}

std::string iso8601_utc(double seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

CheckpointFile file_record(const std::string& path, const SafetensorsWriteResult& r, size_t arrays) {
  CheckpointFile f;
  f.set_name(base_name(path));
  f.set_size_bytes(r.size_bytes);
  f.set_crc32c(r.crc32c);
  f.set_num_arrays(static_cast<int64_t>(arrays));
  return f;
}

// Removes the temporaries of a save that did not finish (an exception between stages).
struct TempGuard {
  std::vector<std::string> paths;
  ~TempGuard() {
    for (const auto& p : paths) ::unlink(p.c_str());
  }
};

}  // namespace

CheckpointManager::CheckpointManager(std::string dir) : CheckpointManager(std::move(dir), Options{}) {}

CheckpointManager::CheckpointManager(std::string dir, Options options)
    : dir_(std::move(dir)), options_(std::move(options)) {
  FASTNN_CHECK(!dir_.empty(), "CheckpointManager: empty directory");
  FASTNN_CHECK(options_.keep_max >= 0, "CheckpointManager: keep_max ", options_.keep_max, " < 0");
}

CheckpointManager::~CheckpointManager() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void CheckpointManager::stage(const std::string& name) {
  if (options_.fault_hook) options_.fault_hook(name);
}

void CheckpointManager::acquire_lock(const std::vector<std::string>& spare) {
  if (lock_fd_ >= 0) return;
  make_directories(dir_);
  const std::string path = (std::filesystem::path(dir_) / ".checkpoint.lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_io_error(path, "create");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK)
      throw ConfigError(str(dir_, ": another process is saving checkpoints into this directory (", path, " is locked)"));
    errno = e;
    throw_io_error(path, "lock");
  }
  lock_fd_ = fd;
  remove_leftovers(spare);
}

// After a crash: temporaries of checkpoint files or of the index, and data files whose meta never
// arrived. Only names this manager writes are touched, and never the `spare` names (the shard
// temporaries the other ranks wrote for the save under way).
void CheckpointManager::remove_leftovers(const std::vector<std::string>& spare) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(spare.begin(), spare.end(), name) != spare.end()) continue;
    if (name.size() > 1 + kTempSuffix.size() && name.front() == '.' && name.ends_with(kTempSuffix)) {
      const std::string inner = name.substr(1, name.size() - 1 - kTempSuffix.size());
      if (inner == internal::kIndexName || parse_checkpoint_name(inner)) remove_file(entry.path().string());
      continue;
    }
    std::string suffix;
    const auto step = parse_checkpoint_name(name, &suffix);
    if (!step || !suffix.ends_with(".safetensors")) continue;
    const std::string meta_file = meta_path(checkpoint_prefix(dir_, *step));
    if (!std::filesystem::exists(meta_file)) {
      remove_file(entry.path().string());
    } else if (parse_shard_suffix(suffix)) {
      // A shard file its committed meta does not list: left by a crash while a checkpoint of the same
      // step was replaced at another world size. An unreadable meta keeps everything (it is damaged).
      try {
        const CheckpointMeta meta = read_checkpoint_meta(meta_file);
        if (std::none_of(meta.shard_files().begin(), meta.shard_files().end(),
                         [&](const RowShardFile& s) { return s.name() == name; }))
          remove_file(entry.path().string());
      } catch (const FormatError&) {
      }
    }
  }
  if (ec) throw IoError(str(dir_, ": cannot list: ", ec.message()));
}

void CheckpointManager::write_index(const CheckpointInfo& latest, const std::vector<CheckpointInfo>& kept) {
  CheckpointIndex index;
  index.set_model_checkpoint_path(base_name(latest.prefix));
  for (const auto& k : kept) index.add_all_model_checkpoint_paths(base_name(k.prefix));
  std::string text;
  google::protobuf::TextFormat::PrintToString(index, &text);
  const std::string final_path = (std::filesystem::path(dir_) / internal::kIndexName).string();
  const std::string tmp = temp_path_for(dir_, final_path);
  TempGuard guard{{tmp}};
  write_text_file(tmp, text, options_.fsync);
  rename_file(tmp, final_path);
  if (options_.fsync) fsync_path(dir_);
}

CheckpointInfo CheckpointManager::save(int64_t step, std::span<const ArrayView> weights,
                                       std::span<const ArrayView> optimizer, CheckpointMeta meta) {
  return save(step, weights, optimizer, std::move(meta), {});
}

CheckpointInfo CheckpointManager::save(int64_t step, std::span<const ArrayView> weights,
                                       std::span<const ArrayView> optimizer, CheckpointMeta meta,
                                       std::span<const RowShardFile> shards) {
  FASTNN_CHECK(step >= 0, "checkpoint step ", step, " < 0");
  const CheckpointInfo info{step, checkpoint_prefix(dir_, step)};
  meta.set_step(step);
  meta.clear_shard_files();
  for (const RowShardFile& s : shards) *meta.add_shard_files() = s;
  validate_row_shards(meta, str("checkpoint ", info.prefix, " (shard records to commit)"));
  std::vector<std::string> shard_temps, shard_finals, spare;
  for (const RowShardFile& s : shards) {
    spare.push_back(OutputDir::temp_name(s.name()));
    shard_temps.push_back(shard_temp_path(dir_, s.name()));
    shard_finals.push_back((std::filesystem::path(dir_) / s.name()).string());
  }
  acquire_lock(spare);
  const std::string w = weights_path(info.prefix), o = optimizer_path(info.prefix), m = meta_path(info.prefix);
  const std::string tw = temp_path_for(dir_, w), to = temp_path_for(dir_, o), tm = temp_path_for(dir_, m);
  TempGuard guard{{tw, to, tm}};
  guard.paths.insert(guard.paths.end(), shard_temps.begin(), shard_temps.end());
  for (size_t i = 0; i < shards.size(); ++i) {
    struct stat st;
    if (::stat(shard_temps[i].c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != shards[i].size_bytes())
      throw IoError(str(shard_temps[i], ": rank ", shards[i].rank(), "'s shard file is missing or not ",
                        shards[i].size_bytes(), " bytes (do all ranks save into the same directory?)"));
  }

  const std::map<std::string, std::string> st_meta = {{"fastnn_step", std::to_string(step)}};
  const auto rw = write_safetensors(tw, weights, st_meta, options_.fsync);
  stage("weights");
  const auto ro = write_safetensors(to, optimizer, st_meta, options_.fsync);
  stage("optimizer");

  *meta.mutable_weights_file() = file_record(w, rw, weights.size());
  *meta.mutable_optimizer_file() = file_record(o, ro, optimizer.size());
  if (!meta.has_wall_time())
    meta.set_wall_time(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (!meta.has_timestamp()) meta.set_timestamp(iso8601_utc(meta.wall_time()));
  if (meta.fastnn_version().empty() && !options_.fastnn_version.empty()) meta.set_fastnn_version(options_.fastnn_version);
  write_text_file(tm, checkpoint_meta_to_text(meta), options_.fsync);
  stage("meta_temp");

  // Replacing a checkpoint of the same step: un-commit it first, so that no moment pairs the old meta
  // with new data files.
  if (std::filesystem::exists(m)) {
    remove_file(m);
    if (options_.fsync) fsync_path(dir_);
  }
  rename_file(tw, w);
  rename_file(to, o);
  for (size_t i = 0; i < shards.size(); ++i) rename_file(shard_temps[i], shard_finals[i]);
  if (options_.fsync) fsync_path(dir_);
  stage("renamed_data");
  rename_file(tm, m);
  if (options_.fsync) fsync_path(dir_);
  stage("meta");
  // Shard files of an earlier checkpoint of this step (saved at another world size) are not ours.
  for (const std::string& name : internal::shard_names_of_step(dir_, step))
    if (std::find_if(shards.begin(), shards.end(), [&](const RowShardFile& s) { return s.name() == name; }) == shards.end())
      remove_file((std::filesystem::path(dir_) / name).string());

  // Retention: this checkpoint plus the highest other steps, keep_max in all.
  std::vector<CheckpointInfo> all = internal::list_complete(dir_), kept, drop;
  size_t budget = options_.keep_max == 0 ? all.size() : static_cast<size_t>(options_.keep_max) - 1;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->step == step) continue;
    if (budget > 0) {
      kept.push_back(*it);
      --budget;
    } else {
      drop.push_back(*it);
    }
  }
  kept.push_back(info);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  write_index(info, kept);
  stage("index");
  for (const auto& d : drop) {
    remove_file(meta_path(d.prefix));  // un-commit first
    remove_file(weights_path(d.prefix));
    remove_file(optimizer_path(d.prefix));
    for (const std::string& name : internal::shard_names_of_step(dir_, d.step))
      remove_file((std::filesystem::path(dir_) / name).string());
  }
  stage("retention");
  return info;
}

std::vector<CheckpointInfo> CheckpointManager::list() const { return internal::list_complete(dir_); }

std::optional<CheckpointInfo> CheckpointManager::latest() const { return internal::latest_complete(dir_); }

LoadedCheckpoint CheckpointManager::load_latest(const CheckpointLoadOptions& options) const {
  const auto l = latest();
  if (!l) throw ConfigError(str(dir_, ": no complete checkpoint in this directory"));
  return load_checkpoint(l->prefix, options);
}

LoadedCheckpoint CheckpointManager::load(const std::string& path_or_prefix, const CheckpointLoadOptions& options) const {
  if (parse_checkpoint_name(path_or_prefix)) return load_checkpoint((std::filesystem::path(dir_) / path_or_prefix).string(), options);
  return load_checkpoint(path_or_prefix, options);
}

}  // namespace fastnn::checkpoint
