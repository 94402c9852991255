// JSON-lines metrics writer.
#include "trainer/metrics/jsonl_writer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <unistd.h>

#include "core/atomic_output.h"
#include "core/line_reader.h"
#include "core/check.h"

namespace fastnn {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

void merge_extra(nlohmann::json& j, const std::map<std::string, double>& extra) {
  for (const auto& [k, v] : extra) {
    FASTNN_CHECK(!j.contains(k), "metrics: extra field '", k, "' would replace a fixed field");
    j[k] = number(v);
  }
}

double or_now(double t) { return t != 0 ? t : wall_clock_seconds(); }

}  // namespace

double wall_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

JsonlMetricsWriter::JsonlMetricsWriter(std::string path, bool append) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), append ? "ae" : "we");
  if (!file_) throw_io_error(path_, append ? "open for appending" : "create");
}

JsonlMetricsWriter::~JsonlMetricsWriter() {
  if (file_) std::fclose(file_);
}

nlohmann::json misclassified_json(const std::vector<MisclassifiedImage>& images) {
  nlohmann::json out = nlohmann::json::array();
  for (const MisclassifiedImage& x : images)
    out.push_back({{"file", x.file},   {"record", x.record},       {"offset", x.offset},
                   {"label", x.label}, {"predicted", x.predicted}, {"confidence", number(x.confidence)}});
  return out;
}

nlohmann::json JsonlMetricsWriter::to_json(const TrainLogEntry& m) {
  nlohmann::json j = {{"event", "train"},
                      {"step", m.step},
                      {"epoch", number(m.epoch)},
                      {"loss", number(m.loss)},
                      {"accuracy", number(m.accuracy)},
                      {"lr", number(m.lr)},
                      {"images_per_sec", number(m.images_per_sec)},
                      {"data_wait_fraction", number(m.data_wait_fraction)},
                      {"wall_time", or_now(m.wall_time)}};
  merge_extra(j, m.extra);
  return j;
}

nlohmann::json JsonlMetricsWriter::to_json(const EvalLogEntry& m) {
  nlohmann::json j = {{"event", m.event},        {"step", m.step},         {"epoch", number(m.epoch)},
                      {"split", m.split},        {"top1", number(m.top1)}, {"top5", number(m.top5)},
                      {"loss", number(m.loss)},  {"num_examples", m.num_examples},
                      {"wall_time", or_now(m.wall_time)}};
  merge_extra(j, m.extra);
  if (m.confusion_classes > 0) {
    const size_t c = static_cast<size_t>(m.confusion_classes);
    FASTNN_CHECK(m.confusion.size() == c * c, "metrics: confusion matrix of ", m.confusion.size(), " entries for ", c,
                 " classes");
    nlohmann::json rows = nlohmann::json::array();
    for (size_t r = 0; r < c; ++r)
      rows.push_back(std::vector<int64_t>(m.confusion.begin() + r * c, m.confusion.begin() + (r + 1) * c));
    j["confusion_matrix"] = std::move(rows);
  }
  if (!m.misclassified.empty()) j["misclassified"] = misclassified_json(m.misclassified);
  return j;
}

void JsonlMetricsWriter::write(const TrainLogEntry& m) { write(to_json(m)); }
void JsonlMetricsWriter::write(const EvalLogEntry& m) { write(to_json(m)); }

void JsonlMetricsWriter::write(const nlohmann::json& object) {
  FASTNN_CHECK(file_ != nullptr, path_, ": metrics writer used after close()");
  FASTNN_CHECK(object.is_object(), path_, ": a metrics line must be a JSON object");
  // error_handler::replace: a string that is not UTF-8 (a tag from a file name) must not lose the line.
  const std::string line = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw_io_error(path_, "write");
}

void JsonlMetricsWriter::close() {
  if (!file_) return;
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) throw_io_error(path_, "close");
}

JsonlRepair repair_jsonl_for_resume(const std::string& path, int64_t resume_step) {
  JsonlRepair r;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return r;
  LineReader in(path, kMaxMetricsLineBytes);  // a FIFO or folder in its place is refused, not waited on
  std::vector<std::string> keep;
  std::string line;
  while (in.next(&line)) {
    const bool complete = in.ended();  // a kill mid-write leaves a last line without '\n'
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!complete || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
      ++r.torn;
    } else if (j["step"].get<int64_t>() > resume_step) {
      ++r.after_step;
    } else {
      keep.push_back(std::move(line));
    }
  }
  r.kept = static_cast<int64_t>(keep.size());
  if (r.torn == 0 && r.after_step == 0) return r;
  const std::string tmp = path + ".fastnn-tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "we");
  if (!f) throw_io_error(tmp, "create");
  bool ok = true;
  for (const std::string& l : keep) ok = ok && std::fwrite(l.data(), 1, l.size(), f) == l.size() && std::fputc('\n', f) != EOF;
  ok = ok && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw_io_error(tmp, "write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw_io_error(tmp, str("rename to ", path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  fsync_path(dir.empty() ? "." : dir);
  return r;
}

}  // namespace fastnn
