// The JSON-lines metrics file (`<output_dir>/metrics.jsonl`): one JSON object per line, one line per
// event, flushed after every line so `tail -f` and a killed run both see every event written.
//
//   {"event":"train","step":100,"epoch":0.64,"loss":0.41,"accuracy":0.875,"lr":0.01,
//    "images_per_sec":5120.5,"data_wait_fraction":0.02,"wall_time":1714567890.123}
//   {"event":"eval","step":1000,"epoch":6.4,"split":"test","top1":0.9,"top5":0.99,"loss":0.31,
//    "num_examples":10000,"wall_time":1714567999.5,"confusion_matrix":[[980,3,...],...]}
// confusion_matrix (eval lines, when the evaluation counted one: at most 256 classes, not a sharded
// head; trainer/loop/evaluate.h): rows are the true class, columns the predicted one, counts of examples.
// misclassified (eval lines with per-class logits): the most confident mistakes, at most kMaxMisclassified,
//   [{"file":"/data/test-00000-of-00004.tfrecord","record":17,"offset":5210,"label":3,"predicted":6,
//     "confidence":0.97},...], most confident first; what `fastnn report` shows as a gallery.
//
// Numbers are JSON numbers (doubles printed with enough digits to round-trip); a NaN or infinite
// value, which JSON cannot represent, is written as null. Extra fields go in `extra` and are merged
// into the object (they may not replace the fixed ones).
//
// A run appends to its file; it is never truncated by a later run (the run directory,
// trainer/loop/run_directory.h, decides whether a run may write there at all). On resume,
// repair_jsonl_for_resume() first makes the file end at the resumed step.
//
// Errors: IoError naming the file. Threading: one writer per file, used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fastnn {

struct TrainLogEntry {
  int64_t step = 0;
  double epoch = 0;  // fractional: samples seen / samples per epoch
  double loss = 0;
  double accuracy = 0;  // top-1 on the training batch(es) since the last event
  double lr = 0;
  double images_per_sec = 0;
  double data_wait_fraction = 0;  // share of wall time the step loop waited for the pipeline
  double wall_time = 0;           // seconds since the Unix epoch; 0: now
  std::map<std::string, double> extra;
};

// The largest confusion matrix an eval line holds: classes² counts on one line.
inline constexpr int64_t kMaxConfusionClasses = 256;
// Longest metrics.jsonl line a reader accepts (a 256-class confusion matrix is under 1 MiB); a longer
// one is a FormatError naming the file and line, never buffered whole.
inline constexpr size_t kMaxMetricsLineBytes = size_t{16} << 20;

// One wrongly classified evaluation image, found again by its record: the shard file, the record's
// index and the byte offset of its frame in the uncompressed record stream (pipeline::SampleSource).
struct MisclassifiedImage {
  std::string file;
  uint64_t record = 0, offset = 0;
  int64_t label = 0, predicted = 0;
  double confidence = 0;  // the softmax probability of the predicted class
};
// The most confident mistakes an eval line keeps ("misclassified", most confident first).
inline constexpr size_t kMaxMisclassified = 16;

struct EvalLogEntry {
  // "eval", or "eval_moving_averages": the same evaluation of the weights' moving averages (readers that
  // know only "eval" pass it over).
  std::string event = "eval";
  int64_t step = 0;
  double epoch = 0;
  std::string split = "eval";
  double top1 = 0;
  double top5 = 0;
  double loss = 0;
  int64_t num_examples = 0;
  double wall_time = 0;  // 0: now
  std::map<std::string, double> extra;
  int64_t confusion_classes = 0;   // 0: no "confusion_matrix"
  std::vector<int64_t> confusion;  // row-major [true][predicted], confusion_classes² entries
  std::vector<MisclassifiedImage> misclassified;  // empty: no "misclassified"
};

// The "misclassified" array of an eval line (also `fastnn eval --json`'s).
nlohmann::json misclassified_json(const std::vector<MisclassifiedImage>& images);

// Seconds since the Unix epoch, sub-millisecond resolution.
double wall_clock_seconds();

class JsonlMetricsWriter {
 public:
  // Creates the file, or appends to it when `append` (a resumed run continues its file). Parent
  // directories must exist.
  explicit JsonlMetricsWriter(std::string path, bool append = false);
  ~JsonlMetricsWriter();
  JsonlMetricsWriter(const JsonlMetricsWriter&) = delete;
  JsonlMetricsWriter& operator=(const JsonlMetricsWriter&) = delete;

  const std::string& path() const { return path_; }
  void write(const TrainLogEntry& m);
  void write(const EvalLogEntry& m);
  // Any object (its own "event" field is the caller's business); written as one line.
  void write(const nlohmann::json& object);
  void close();

  static nlohmann::json to_json(const TrainLogEntry& m);
  static nlohmann::json to_json(const EvalLogEntry& m);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Resuming a run at `resume_step`: keeps, in order, the lines of `path` that are complete JSON objects
// with an integer "step" <= resume_step, and drops the rest: a torn last line (a failed write or kill -9
// mid-line), any other line that is not such an object, and the lines of the steps the resumed run will
// write again. So after any number of kill -9 + resume the file holds each step's lines once. It is
// rewritten atomically (temporary + fsync + rename) only when something is dropped; a missing file is
// fine (all counts 0).
struct JsonlRepair {
  int64_t kept = 0, torn = 0, after_step = 0;  // lines kept, unusable lines dropped, later steps dropped
};
JsonlRepair repair_jsonl_for_resume(const std::string& path, int64_t resume_step);

}  // namespace fastnn
