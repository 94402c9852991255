// TensorBoard event files: `<dir>/events.out.tfevents.<unix seconds>.<hostname>`, a TFRecord file
// (core/tfrecord.h, plain) of serialized tensorflow.Event protos (schemas/event.proto), which is what
// TensorBoard and tf.compat.v1.train.summary_iterator read.
//
// The first record is Event{wall_time, file_version: "brain.Event:2"}; every later one is
// Event{wall_time, step, summary{value{tag, simple_value}...}} with one or more scalars. Records are
// flushed to the file every `flush_every` events (1: every event) and at close(), so TensorBoard
// sees a running job's scalars.
//
// If a file of that name exists already (two writers started within a second), ".<pid>.<n>" is
// appended instead of overwriting it.
//
// Errors: IoError naming the file. Threading: one writer per file, used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fastnn {

class TFRecordWriter;

class EventFileWriter {
 public:
  struct Options {
    int flush_every = 1;
    // Replaces the host name in the file name (tests); empty: gethostname().
    std::string hostname;
  };

  // Creates `dir` if needed, then the file, and writes the file_version event.
  explicit EventFileWriter(const std::string& dir);
  EventFileWriter(const std::string& dir, Options options);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  const std::string& path() const { return path_; }

  // One event with one scalar. wall_time 0: now.
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time = 0);
  // One event with several scalars (e.g. loss, accuracy and lr of the same step).
  void add_scalars(const std::vector<std::pair<std::string, double>>& values, int64_t step, double wall_time = 0);
  void flush();
  void close();

 private:
  void write_event(const std::string& bytes);

  std::string path_;
  Options options_;
  std::unique_ptr<TFRecordWriter> writer_;
  int unflushed_ = 0;
};

}  // namespace fastnn
