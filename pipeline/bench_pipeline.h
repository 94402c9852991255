// `fastnn bench pipeline`: the pipeline's throughput beside its ceiling, measured in the same run.
//
// Pipeline: from_manifest(data, split) (or the split's *.tfrecord files when there is no manifest)
// → interleave → [cache] → shuffle → repeat forever → map_and_batch(preset) → prefetch, on `threads`
// workers. After warm-up the caller takes batches until the workers have finished `steps` batches'
// worth of samples; the rate is those samples over that time, so neither the start-up nor batches
// already waiting in the prefetch buffer when the clock starts count.
//
// Ceiling: the bare loop — TFRecordReader → the same preset map function, one sample at a time into
// the slots of one reused batch buffer, no threads, queues or pool — over the first records of the
// split on one thread, times `threads`. A pipeline at 100% of the ceiling costs nothing beyond the
// work itself. Pipeline and ceiling take turns (`rounds` of each), so that a shared machine's slow
// spells hit both; before each ceiling turn the pipeline is left to fill its pool and go idle.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/preset.h"

namespace fastnn::pipeline {

struct PipelineBenchOptions {
  std::string data;
  std::string split = "train";
  PreprocessConfig preprocess;
  int batch_size = 256;
  int threads = 2;
  int steps = 50;            // batches' worth of samples produced while the clock runs
  int warmup_steps = 2;      // batches taken before the clock starts
  int rounds = 4;            // pipeline and ceiling alternate this many times
  size_t shuffle_buffer = 1024;
  int prefetch = 4;
  int num_parallel_batches = 2;
  int cycle_length = 4;
  bool cache = false;
  bool deterministic = true;
  bool verify_data_crc = true;
  uint64_t seed = 0;
  bool ceiling = true;
  int64_t ceiling_images = 0;  // 0: about as many as the pipeline processed per thread
  // Also run `threads` bare loops side by side after each ceiling turn (each as many images as the
  // single-thread turn): what `threads` threads doing only the work reach together on this machine,
  // i.e. the ceiling with the threads' contention for shared caches and memory included.
  bool parallel_ceiling = false;
  // The caller holds each timed batch this long before taking the next (a training step's time): the
  // pipeline then runs at the caller's pace with idle time between batches, and its CPU time per image
  // says what its workers cost while they wait (spinning, waking) beside the work itself. 0: the caller
  // takes batches as fast as they come.
  double consume_ms = 0;
};

struct PipelineBenchResult {
  int rounds = 0;               // turns actually taken (at most steps)
  uint64_t images = 0;          // finished by the workers while the clock ran
  double seconds = 0;
  double images_per_sec = 0;
  double mb_per_sec = 0;        // encoded record bytes consumed per second
  double ceiling_single_images_per_sec = 0;
  double ceiling_images_per_sec = 0;
  uint64_t ceiling_images = 0;
  // Shares of the pipeline's CPU time per stage (sum to 1): reading records (driver), parsing the
  // Example, decoding, augmenting (crop, resize, flip, normalise, store).
  double share_read = 0, share_parse = 0, share_decode = 0, share_augment = 0;
  double consumer_wait_share = 0;  // of the timed wall time, the caller waited for batches
  double peak_rss_mb = 0;
  // CPU accounting, to tell a slow pipeline from a busy machine: the cores the pipeline process
  // got while the clock ran (process CPU time / wall time) and the images per CPU second it spent;
  // the same for the ceiling's thread. images_per_cpu_sec / ceiling_images_per_cpu_sec is the
  // pipeline's overhead alone (1.0: none), whatever other processes take.
  double cpu_cores = 0, images_per_cpu_sec = 0;
  double ceiling_cpu_cores = 0, ceiling_images_per_cpu_sec = 0;
  // Wall time inside the map function (parse + decode + augment) per image, in the pipeline's
  // workers and in the ceiling's loop: equal when the workers run the same code as fast; higher in
  // the pipeline when its threads slow each other down (shared caches, memory) or are preempted.
  double map_us_per_image = 0, ceiling_map_us_per_image = 0;
  double parallel_ceiling_images_per_sec = 0;  // with parallel_ceiling
  uint64_t buffers_allocated = 0;
  int pool_capacity = 0;
  uint64_t records_per_epoch = 0;
  std::string sample;  // e.g. "224x224x3 float32 NHWC"
};

PipelineBenchResult run_pipeline_bench(const PipelineBenchOptions& options);
nlohmann::json bench_json(const PipelineBenchOptions& options, const PipelineBenchResult& result);

}  // namespace fastnn::pipeline
