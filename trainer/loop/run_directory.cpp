#include "trainer/loop/run_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/logging.h"
#include "trainer/config/config_fields.h"
#include "trainer/metrics/jsonl_writer.h"

namespace fastnn::loop {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A checkpoint file name, possibly set aside ("<name>.damaged", "<name>.damaged-2").
bool is_checkpoint_file(const std::string& name) {
  if (checkpoint::parse_checkpoint_name(name)) return true;
  const size_t at = name.rfind(".damaged");
  if (at == std::string::npos || !checkpoint::parse_checkpoint_name(name.substr(0, at))) return false;
  const std::string_view rest = std::string_view(name).substr(at + 8);
  return rest.empty() || (rest.front() == '-' && all_digits(rest.substr(1)));
}

bool is_run_file(const std::string& name) {
  constexpr std::string_view kTmp = ".fastnn-tmp";
  if (name.size() > 1 + kTmp.size() && name.front() == '.' && name.ends_with(kTmp)) {
    const std::string inner = name.substr(1, name.size() - 1 - kTmp.size());
    return inner == "checkpoint" || inner == "report.html" || checkpoint::parse_checkpoint_name(inner).has_value();
  }
  // report.html: `fastnn report RUN_DIR`'s default page, which describes this run and no other.
  if (name == "checkpoint" || name == "metrics.jsonl" || name == "metrics.jsonl.fastnn-tmp" || name == "report.html")
    return true;
  if (name.starts_with("events.out.tfevents.")) return true;
  if (name.starts_with("timeline-")) {  // profiler traces: timeline-<step>.json(.tmp)
    std::string_view rest = std::string_view(name).substr(9);
    if (rest.ends_with(".tmp")) rest.remove_suffix(4);
    return rest.ends_with(".json") && all_digits(rest.substr(0, rest.size() - 5));
  }
  return is_checkpoint_file(name);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string list_some(const std::vector<std::string>& names) {
  if (names.size() <= 4) return join(names, ", ");
  return join(std::vector<std::string>(names.begin(), names.begin() + 4), ", ") + str(", ... (", names.size(), " files)");
}

}  // namespace

std::vector<std::string> run_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const std::string& name : checkpoint::list_entry_names(dir))
    if (is_run_file(name) && !std::filesystem::is_directory(std::filesystem::path(dir) / name, ec)) out.push_back(name);
  // keep_best_checkpoint's folder, the moving averages' and the evaluation's TensorBoard folder are the
  // run's too.
  for (const char* sub : {"best", "ema", "eval"}) {
    const std::filesystem::path folder = std::filesystem::path(dir) / sub;
    if (!std::filesystem::is_directory(folder, ec)) continue;
    for (const std::string& name : checkpoint::list_entry_names(folder.string()))
      if (is_run_file(name) && !std::filesystem::is_directory(folder / name, ec)) out.push_back(str(sub, "/", name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::set<std::string>& non_identity_fields() {
  static const std::set<std::string> fields = {
      // when to stop: raising it continues a finished run (TF-slim's train_dir habit)
      "stop_at_step", "num_epochs",
      // cadence of logging, saving, evaluation and profiling
      "log_loss_every_n_iters", "save_checkpoints_steps", "save_checkpoints_secs", "save_summaries_secs",
      "keep_checkpoint_max", "eval_every_n_steps", "keep_best_checkpoint", "eval_metric", "early_stopping_patience",
      "early_stopping_min_delta",
      "profile_every_n_iters", "profile_at_task", "hooks", "log_device_placement", "print_model_statistics",
      // output paths and the fine-tuning source (used only by a run's first start)
      "output_dir", "model_dir", "ckpt_file_name", "eval_files", "checkpoint_path", "checkpoint_exclude_scopes",
      "ignore_missing_vars", "checkpoint_use_moving_averages",
      // performance knobs that do not change the batches or the update
      "num_preprocessing_threads", "num_parallel_batches", "prefetch_buffer_size", "datasets_use_caching",
      "collective_timeout_seconds", "allreduce_bucket_mb", "comm_backend", "device", "memory_limit_mb",
      "check_memory"};
  return fields;
}

std::vector<std::string> identity_differences(const JobConfig& saved, const JobConfig& now) {
  const auto a = config_field_values(saved, non_identity_fields());
  const auto b = config_field_values(now, non_identity_fields());
  std::vector<std::string> out;
  for (const auto& [name, value] : b) {
    const auto it = a.find(name);
    if (it != a.end() && it->second != value) out.push_back(str(name, " (saved ", it->second, ", now ", value, ")"));
  }
  return out;
}

RunDirectory::RunDirectory(std::string dir, const JobConfig& config, Options options)
    : dir_(std::move(dir)), options_(options) {
  if (options_.resume && options_.overwrite)
    throw ConfigError("--resume and --overwrite contradict each other: continue the run in the folder, or start over");
  if (options_.writer) lock();
  try {
    open(config);
  } catch (...) {
    ::close(lock_fd_);  // a refusal must not keep the folder locked (the destructor does not run)
    lock_fd_ = -1;
    throw;
  }
}

RunDirectory::~RunDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

void RunDirectory::lock() {
  make_directories(dir_);
  const std::string path = (std::filesystem::path(dir_) / kRunLockName).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_io_error(path, "create");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    if (e != EWOULDBLOCK) {
      errno = e;
      throw_io_error(path, "lock");
    }
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    throw ConfigError(str(dir_, ": this run directory is in use by another fastnn train",
                          all_digits(pid) ? str(" (pid ", pid, ")") : std::string(),
                          "; a run directory belongs to one run: wait for it to end, or choose another output_dir"));
  }
  lock_fd_ = fd;
  const std::string pid = str(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    log_warn(path, ": cannot record this process's pid (", std::strerror(errno), ")");
}

void RunDirectory::open(const JobConfig& config) {
  if (options_.overwrite) {
    if (!options_.writer) return;  // rank 0 clears the folder; this rank starts at step 0 as well
    const std::vector<std::string> files = run_files(dir_);
    for (const std::string& f : files) {
      const std::string path = (std::filesystem::path(dir_) / f).string();
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_io_error(path, "remove");
    }
    if (!files.empty()) {
      fsync_path(dir_);
      log_info("--overwrite: removed ", files.size(), " file(s) of the previous run from ", dir_, " (", list_some(files),
               "); starting at step 0");
    }
    return;
  }
  const std::vector<std::string> files = run_files(dir_);
  if (files.empty()) {
    if (options_.resume) log_warn("--resume: no checkpoint in ", dir_, "; starting from scratch");
    return;
  }
  // The latest good checkpoint; the damaged ones above it are remembered, set aside only if we resume.
  std::vector<std::pair<std::string, std::string>> damaged;  // prefix, reason
  for (const checkpoint::CheckpointInfo& c : checkpoint::list_committed_latest_first(dir_)) {
    try {
      resume_.emplace(checkpoint::load_checkpoint(c.prefix, {.optimizer = true, .verify = true}));
      break;
    } catch (const Error& e) {
      damaged.emplace_back(c.prefix, e.what());
    }
  }
  const std::string offer = str("; pass --resume to continue it anyway, or --overwrite to start over (removes only the "
                                "files fastnn wrote there), or choose another output_dir");
  if (!options_.resume && !resume_ && damaged.empty()) {
    // A run that failed before its first checkpoint (a bad flag found late, a full disk, kill -9) left
    // logs but no trained state: nothing is lost by starting it again, so the corrected rerun just works.
    log_warn(dir_, " holds files of a run that saved no checkpoint (", list_some(files),
             "): starting again from step 0");
  } else if (!options_.resume) {
    if (!resume_) {
      std::string why = damaged.empty() ? std::string("no checkpoint")
                                        : str("no usable checkpoint (", damaged.front().first, " is damaged: ",
                                              damaged.front().second, ")");
      throw ConfigError(str(dir_, " holds files of another run (", list_some(files), ") and ", why, offer));
    }
    const CheckpointMeta& meta = resume_->meta;
    std::vector<std::string> diffs;
    if (!meta.has_config()) diffs.push_back("(the checkpoint records no configuration)");
    else diffs = identity_differences(meta.config(), config);
    if (meta.world_size() > 0 && meta.world_size() != options_.world)
      diffs.push_back(str("ranks (saved ", meta.world_size(), ", now ", options_.world, ")"));
    if (!diffs.empty()) {
      const std::string message = str(dir_, " holds another run (latest checkpoint ", resume_->prefix,
                                      ") with a different configuration: ", join(diffs, "; "), offer);
      resume_.reset();
      throw ConfigError(message);
    }
    log_info(dir_, " holds a run with the same configuration (checkpoint at step ", meta.step(),
             "): continuing it, as --resume would; pass --overwrite to start over instead");
  }
  if (options_.writer) {
    for (const auto& [prefix, reason] : damaged) {
      const std::vector<std::string> moved = checkpoint::set_aside_checkpoint(prefix);
      log_warn("checkpoint ", prefix, " is damaged: ", reason, "; set aside as ", join(moved, ", "), "; continuing from ",
               resume_ ? resume_->prefix : std::string("step 0"));
    }
  } else {
    for (const auto& [prefix, reason] : damaged) log_warn("checkpoint ", prefix, " is damaged: ", reason, "; skipped");
  }
  if (options_.resume && !resume_) log_warn("--resume: no usable checkpoint in ", dir_, "; starting from scratch");
  if (options_.writer) {
    const int64_t step = resume_ ? resume_->meta.step() : 0;
    const JsonlRepair r = repair_jsonl_for_resume((std::filesystem::path(dir_) / "metrics.jsonl").string(), step);
    if (r.torn > 0 || r.after_step > 0)
      log_info("metrics.jsonl: kept ", r.kept, " line(s) up to step ", step, ", dropped ", r.after_step,
               " line(s) of later steps and ", r.torn, " torn or unreadable line(s)");
  }
}

}  // namespace fastnn::loop
