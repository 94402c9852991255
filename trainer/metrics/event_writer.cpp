// TensorBoard event file writer.
#include "trainer/metrics/event_writer.h"

#include <unistd.h>

#include <filesystem>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/tfrecord.h"
#include "schemas/event.pb.h"
#include "trainer/metrics/jsonl_writer.h"

namespace fastnn {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir) : EventFileWriter(dir, Options{}) {}

EventFileWriter::EventFileWriter(const std::string& dir, Options options) : options_(std::move(options)) {
  FASTNN_CHECK(options_.flush_every >= 1, "EventFileWriter: flush_every ", options_.flush_every, " < 1");
  make_directories(dir);
  const double now = wall_clock_seconds();
  const std::string host = options_.hostname.empty() ? host_name() : options_.hostname;
  const auto base = std::filesystem::path(dir) / str("events.out.tfevents.", static_cast<int64_t>(now), ".", host);
  path_ = base.string();
  for (int n = 1; std::filesystem::exists(path_); ++n) path_ = str(base.string(), ".", ::getpid(), ".", n);
  writer_ = std::make_unique<TFRecordWriter>(path_);
  tensorflow::Event e;
  e.set_wall_time(now);
  e.set_file_version("brain.Event:2");
  write_event(e.SerializeAsString());
  flush();
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (...) {  // call close() to see errors
  }
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  add_scalars({{tag, value}}, step, wall_time);
}

void EventFileWriter::add_scalars(const std::vector<std::pair<std::string, double>>& values, int64_t step,
                                  double wall_time) {
  tensorflow::Event e;
  e.set_wall_time(wall_time != 0 ? wall_time : wall_clock_seconds());
  e.set_step(step);
  auto* summary = e.mutable_summary();
  for (const auto& [tag, value] : values) {
    auto* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  write_event(e.SerializeAsString());
}

void EventFileWriter::write_event(const std::string& bytes) {
  FASTNN_CHECK(writer_ != nullptr, path_, ": event writer used after close()");
  writer_->write(bytes);
  if (++unflushed_ >= options_.flush_every) flush();
}

void EventFileWriter::flush() {
  if (!writer_) return;
  writer_->flush();
  unflushed_ = 0;
}

void EventFileWriter::close() {
  if (!writer_) return;
  auto w = std::move(writer_);
  w->close();
}

}  // namespace fastnn
