#include "converters/shard_writer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include "converters/file_io.h"
#include "core/atomic_output.h"
#include "core/check.h"
#include "core/progress.h"

namespace fastnn::converters {
namespace {

constexpr size_t kMaxChunkSamples = 256;

struct EncodedChunk {
  size_t begin = 0, end = 0;  // positions in the shard's sample list
  std::vector<std::string> records;
  ImageSummary image;
};

// Same error category, with the sample and shard in front.
[[noreturn]] void rethrow_with_context(const Error& e, const std::string& where) {
  std::string msg = str(where, ": ", e.what());
  if (dynamic_cast<const IoError*>(&e)) throw IoError(msg);
  if (dynamic_cast<const ConfigError*>(&e)) throw ConfigError(msg);
  throw FormatError(msg);
}

}  // namespace

void ImageSummary::add(const RecordInfo& info) {
  if (!any) {
    any = true;
    format = info.format;
    height = info.height;
    width = info.width;
    channels = info.channels;
    return;
  }
  if (format != info.format) format.clear();
  if (height != info.height) height = 0;
  if (width != info.width) width = 0;
  if (channels != info.channels) channels = 0;
}

void ImageSummary::merge(const ImageSummary& o) {
  if (!o.any) return;
  add(RecordInfo{o.format.c_str(), o.height, o.width, o.channels});
  // add() took o's values as one record; a field o itself saw vary (""/0) must stay "varies".
  if (o.format.empty()) format.clear();
  if (o.height == 0) height = 0;
  if (o.width == 0) width = 0;
  if (o.channels == 0) channels = 0;
}

std::vector<ShardOutcome> write_shards(const Source& source, const DatasetIndex& index,
                                       std::span<const ShardJob> jobs, Compression compression,
                                       bool writeback, Progress* progress) {
  const int concurrency = std::max(1, tbb::this_task_arena::max_concurrency());
  const size_t tokens = static_cast<size_t>(2 * concurrency);
  // Source bytes per chunk so that all shards' chunks in flight stay near kInFlightBytes.
  const uint64_t chunk_bytes =
      std::clamp<uint64_t>(kInFlightBytes / (tokens * static_cast<uint64_t>(concurrency)), 256 << 10, 8 << 20);

  tbb::enumerable_thread_specific<std::unique_ptr<SampleEncoder>> encoders(
      [&] { return source.make_encoder(index); });
  std::vector<ShardOutcome> outcomes(jobs.size());

  // Shards start in list order (an atomic ticket, not a range split between threads), so the caller's
  // order is the order work begins: smallest split first.
  std::atomic<size_t> next_job{0};
  const size_t slots = std::min<size_t>(jobs.size(), static_cast<size_t>(concurrency));
  tbb::parallel_for(size_t{0}, slots, [&](size_t) {
    for (size_t j; (j = next_job.fetch_add(1)) < jobs.size();) {
      const ShardJob& job = jobs[j];
      const std::vector<uint32_t>& order = *job.samples;
      const std::vector<SampleRef>& samples = job.split->samples;
      TFRecordWriter writer(job.path, compression);
      ShardOutcome& out = outcomes[j];

      std::vector<EncodedChunk> pool(tokens);
      std::vector<EncodedChunk*> free_list;
      std::mutex free_mu;
      for (EncodedChunk& c : pool) free_list.push_back(&c);
      size_t next = 0;

      tbb::this_task_arena::isolate([&] {
        tbb::parallel_pipeline(
            tokens,
            tbb::make_filter<void, EncodedChunk*>(
                tbb::filter_mode::serial_in_order,
                [&](tbb::flow_control& fc) -> EncodedChunk* {
                  if (next == order.size()) {
                    fc.stop();
                    return nullptr;
                  }
                  EncodedChunk* c;
                  {
                    std::lock_guard<std::mutex> lock(free_mu);
                    FASTNN_CHECK(!free_list.empty(), "shard writer: chunk pool exhausted");
                    c = free_list.back();
                    free_list.pop_back();
                  }
                  c->begin = next;
                  uint64_t bytes = 0;
                  while (next < order.size() && next - c->begin < kMaxChunkSamples &&
                         (next == c->begin || bytes + samples[order[next]].length <= chunk_bytes)) {
                    bytes += samples[order[next]].length;
                    ++next;
                  }
                  c->end = next;
                  return c;
                }) &
                tbb::make_filter<EncodedChunk*, EncodedChunk*>(
                    tbb::filter_mode::parallel,
                    [&](EncodedChunk* c) -> EncodedChunk* {
                      SampleEncoder& enc = *encoders.local();
                      c->records.resize(c->end - c->begin);
                      c->image = ImageSummary{};
                      for (size_t p = c->begin; p < c->end; ++p) {
                        const SampleRef& s = samples[order[p]];
                        RecordInfo info;
                        try {
                          enc.encode(s, &c->records[p - c->begin], &info);
                        } catch (const Error& e) {
                          rethrow_with_context(e, str(source.describe(index, s), " (for ", job.name, ")"));
                        }
                        c->image.add(info);
                      }
                      return c;
                    }) &
                tbb::make_filter<EncodedChunk*, void>(tbb::filter_mode::serial_in_order, [&](EncodedChunk* c) {
                  for (const std::string& r : c->records) writer.write(r);
                  out.image.merge(c->image);
                  if (progress) progress->add(c->end - c->begin);
                  std::lock_guard<std::mutex> lock(free_mu);
                  free_list.push_back(c);
                }));
      });
      writer.close();
      out.records = writer.records_written();
      out.file_bytes = file_size(job.path);
      if (writeback) start_writeback(job.path);
      FASTNN_CHECK(out.records == order.size(), job.name, ": wrote ", out.records, " records, planned ", order.size());
    }
  }, tbb::simple_partitioner());
  return outcomes;
}

}  // namespace fastnn::converters
