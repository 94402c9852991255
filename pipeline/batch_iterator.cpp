// Driver thread + task_arena + the bounded pool (batch_pool.h). Locks: Impl::mu (ready ring,
// in-flight count, driver state) and BatchPool::mu (free list); never held together.
#include "pipeline/batch_iterator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "core/check.h"
#include "core/clock.h"
#include "core/logging.h"
#include "pipeline/batch_iterator_config.h"
#include "pipeline/batch_pool.h"
#include "pipeline/guard.h"

namespace fastnn::pipeline {
namespace {

// Per-worker totals, read by stats() while the pipeline runs: atomics, one cache line per worker,
// added to once per chunk of samples.
struct alignas(64) WorkerTimes {
  std::atomic<uint64_t> parse_ns{0}, decode_ns{0}, augment_ns{0}, samples{0}, bytes{0};
  void add(const StageTimes& t) {
    parse_ns.fetch_add(t.parse_ns, std::memory_order_relaxed);
    decode_ns.fetch_add(t.decode_ns, std::memory_order_relaxed);
    augment_ns.fetch_add(t.augment_ns, std::memory_order_relaxed);
    samples.fetch_add(t.samples, std::memory_order_relaxed);
    bytes.fetch_add(t.bytes, std::memory_order_relaxed);
  }
};

}  // namespace

struct BatchIterator::Impl {
  Config cfg;
  int threads;
  std::shared_ptr<BatchPool> pool;
  std::unique_ptr<tbb::global_control> thread_limit;
  std::unique_ptr<tbb::task_arena> arena;
  std::unique_ptr<WorkerTimes[]> worker_times;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<PoolEntry*> ring;          // deterministic: completed batches by sequence % size
  std::vector<PoolEntry*> done_fifo;     // non-deterministic: completed batches in completion order
  int inflight = 0;
  uint64_t created = 0;                  // batches handed to the arena
  uint64_t next_seq = 0;                 // next batch the consumer gets (deterministic)
  bool driver_done = false;
  std::exception_ptr driver_error;
  bool stopping = false;

  std::atomic<uint64_t> read_ns{0}, driver_wait_ns{0}, consumer_wait_ns{0};
  std::atomic<uint64_t> batches{0}, samples{0}, skipped_samples{0}, guard_warnings{0};
  BatchGuard guard;
  std::thread driver;

  explicit Impl(Config c) : cfg(std::move(c)) {
    threads = cfg.options.num_threads > 0 ? cfg.options.num_threads
                                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    FASTNN_CHECK(cfg.batch_size >= 1, "batch_size must be >= 1");
    FASTNN_CHECK(cfg.num_parallel_batches >= 1, "num_parallel_batches must be >= 1");
    FASTNN_CHECK(cfg.prefetch >= 0, "prefetch must be >= 0");
    check_mix_options(cfg.options.mix);
    FASTNN_CHECK(cfg.options.mix_parts >= 1, "mix_parts must be >= 1, got ", cfg.options.mix_parts);
    FASTNN_CHECK(cfg.options.max_held_batches >= 1, "max_held_batches must be >= 1");
    pool = std::make_shared<BatchPool>();
    pool->allocator = cfg.options.allocator ? cfg.options.allocator : default_batch_allocator();
    pool->spec = cfg.mapper->spec();
    pool->batch_size = cfg.batch_size;
    pool->capacity = static_cast<size_t>(cfg.prefetch + cfg.num_parallel_batches + cfg.options.max_held_batches);
    ring.assign(pool->capacity, nullptr);
    done_fifo.reserve(pool->capacity);
    worker_times = std::make_unique<WorkerTimes[]>(static_cast<size_t>(threads));
    cfg.mapper->prepare(threads);
    // oneTBB's global worker pool defaults to hardware_concurrency - 1 threads; an arena fed only by
    // enqueue() has no master thread, so raise the limit for as long as this pipeline runs.
    size_t want = static_cast<size_t>(threads) + 1;
    if (tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism) < want)
      thread_limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, want);
    arena = std::make_unique<tbb::task_arena>(threads, 0);
    created = next_seq = cfg.first_batch;  // sequences count from the start of the run
    driver = std::thread([this] { drive(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
      cv.notify_all();
    }
    pool->stop();
    if (driver.joinable()) driver.join();
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return inflight == 0; });
    lock.unlock();
    arena.reset();
    // Completed batches nobody took go back to the pool (which lives on while handles exist).
    for (PoolEntry*& e : ring)
      if (e != nullptr) pool->release(std::exchange(e, nullptr), false);
    for (PoolEntry* e : done_fifo) pool->release(e, false);
  }

  void drive() {
    try {
      // Starting later (make_iterator(first_batch)): whole epochs are not read at all, and the
      // first batches of the starting epoch are read (the shuffle needs them) but never decoded.
      const int64_t per_epoch = std::max<int64_t>(1, cfg.batches_per_epoch);
      uint64_t to_skip = cfg.first_batch % static_cast<uint64_t>(per_epoch);
      for (int64_t epoch = static_cast<int64_t>(cfg.first_batch / static_cast<uint64_t>(per_epoch));
           cfg.epochs < 0 || epoch < cfg.epochs; ++epoch) {
        cfg.stream->start_epoch(epoch);
        uint64_t index = 0;
        int64_t step = 0;
        bool more = true;
        while (more) {
          // Read ahead: fill the next batch's records while the arena works, then hand it over the
          // moment an in-flight slot frees, so the workers never wait for the reader.
          uint64_t t0 = now_ns();
          PoolEntry* e = pool->acquire();
          if (e == nullptr) return finish();
          uint64_t t1 = now_ns();
          int n = 0;
          while (n < cfg.batch_size && cfg.stream->next(&e->records[n], &e->sources_[n])) ++n;
          uint64_t t2 = now_ns();
          read_ns += t2 - t1;
          more = n == cfg.batch_size;
          if (n == 0 || (n < cfg.batch_size && cfg.drop_remainder)) {
            pool->release(e, false);
            driver_wait_ns += t1 - t0;
            break;
          }
          e->size_ = n;
          e->epoch_ = epoch;
          e->step_ = step++;
          e->first_index_ = index;
          index += static_cast<uint64_t>(n);
          if (to_skip > 0) {  // before first_batch: its records have passed through the shuffle
            --to_skip;
            pool->release(e, false);
            driver_wait_ns += t1 - t0;
            continue;
          }
          bool stop;
          {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return stopping || inflight < cfg.num_parallel_batches; });
            stop = stopping;
            if (!stop) {
              e->sequence_ = created++;
              ++inflight;
            }
          }
          driver_wait_ns += (t1 - t0) + (now_ns() - t2);
          if (stop) {
            pool->release(e, false);
            return finish();
          }
          arena->enqueue([this, e] { process(e); });
        }
        if (step == 0) break;  // an epoch without a single batch: repeating it would spin forever
      }
    } catch (...) {
      std::lock_guard lock(mu);
      driver_error = std::current_exception();
    }
    finish();
  }

  void finish() {
    std::lock_guard lock(mu);
    driver_done = true;
    cv.notify_all();
  }

  void process(PoolEntry* e) {
    const size_t sample_bytes = e->spec_.sample_bytes();
    std::atomic<int> skipped{0};
    tbb::parallel_for(tbb::blocked_range<int>(0, e->size_), [&](const tbb::blocked_range<int>& r) {
      int w = tbb::this_task_arena::current_thread_index();
      if (w < 0 || w >= threads) w = 0;
      StageTimes times;
      for (int i = r.begin(); i != r.end(); ++i) {
        SampleContext ctx;
        ctx.seed = cfg.options.seed;
        ctx.epoch = e->epoch_;
        ctx.index = e->first_index_ + static_cast<uint64_t>(i);
        ctx.source = e->sources_[i];
        ctx.worker = w;
        ctx.times = &times;
        e->skipped[i] = 0;
        try {
          cfg.mapper->map(e->records[i], ctx, static_cast<char*>(e->data_) + sample_bytes * i, &e->labels_[i]);
          const int64_t nc = cfg.options.num_classes;
          if (e->labels_[i] < 0 || (nc > 0 && e->labels_[i] >= nc))
            throw FormatError(str("label ", e->labels_[i], " is outside 0..", nc > 0 ? nc - 1 : INT32_MAX,
                                  nc > 0 ? str(" (num_classes ", nc, ")") : std::string()));
          ++times.samples;
        } catch (const FormatError& ex) {
          if (cfg.options.skip_corrupt) {
            e->skipped[i] = 1;
            skipped.fetch_add(1);
            log_warn("skipping ", where(e->sources_[i]), ": ", ex.what());
          } else {
            e->skipped[i] = 2;
            e->errors[i] = std::make_exception_ptr(FormatError(str(where(e->sources_[i]), ": ", ex.what())));
          }
        } catch (...) {
          e->skipped[i] = 2;
          e->errors[i] = std::current_exception();
        }
      }
      worker_times[static_cast<size_t>(w)].add(times);
    });
    // The first failing sample by position decides, so the error does not depend on scheduling.
    for (int i = 0; i < e->size_; ++i) {
      if (e->skipped[i] != 2) continue;
      if (!e->error) e->error = e->errors[i];
      e->errors[i] = nullptr;
    }
    if (skipped.load() > 0) compact(e);
    // Mixed after the whole batch is made (a sample's partner may come from another worker), part by part
    // (DatasetOptions::mix_parts; a batch shortened by skipped samples that no longer divides is one part).
    e->mix_weights_.clear();
    const int parts = e->size_ % cfg.options.mix_parts == 0 ? cfg.options.mix_parts : 1;
    const int part_size = e->size_ / parts;
    const MixOptions& mo = cfg.options.mix;
    for (int p = 0; p < parts && mo.enabled() && !e->error; ++p) {
      const uint64_t key = static_cast<uint64_t>(e->step_) * static_cast<uint64_t>(parts) + static_cast<uint64_t>(p);
      const std::vector<MixDraw> draws =
          draw_mixes(mo, e->spec_.height, e->spec_.width, part_size, cfg.options.seed, e->epoch_, key);
      mix_samples(mo.mode, draws, e->spec_, part_size,
                  static_cast<char*>(e->data_) + e->spec_.sample_bytes() * static_cast<size_t>(p * part_size));
      const std::vector<double> w = own_label_weights(mo.mode, draws, part_size);
      e->mix_weights_.insert(e->mix_weights_.end(), w.begin(), w.end());
    }
    std::lock_guard lock(mu);
    if (cfg.options.deterministic)
      ring[e->sequence_ % ring.size()] = e;
    else
      done_fifo.push_back(e);
    --inflight;
    cv.notify_all();
  }

  // Moves the good samples of a batch with skipped ones to the front, in order.
  void compact(PoolEntry* e) {
    const size_t sb = e->spec_.sample_bytes();
    int k = 0;
    for (int i = 0; i < e->size_; ++i) {
      if (e->skipped[i] != 0) continue;
      if (k != i) {
        std::memmove(static_cast<char*>(e->data_) + sb * k, static_cast<char*>(e->data_) + sb * i, sb);
        e->labels_[k] = e->labels_[i];
        e->sources_[k] = e->sources_[i];
      }
      ++k;
    }
    skipped_samples += static_cast<uint64_t>(e->size_ - k);
    e->size_ = k;
  }

  std::string where(const SampleSource& s) const { return describe_source(*cfg.files, s); }

  bool next(BatchHandle* out) {
    out->reset();
    {
      std::lock_guard lock(pool->mu);
      if (static_cast<size_t>(pool->held) >= pool->capacity)
        throw ConfigError(str("the consumer holds all ", pool->capacity, " batch buffers; release a BatchHandle ",
                              "before asking for the next batch (or raise max_held_batches)"));
    }
    uint64_t t0 = now_ns();
    PoolEntry* e = nullptr;
    {
      std::unique_lock lock(mu);
      for (;;) {
        if (cfg.options.deterministic) {
          PoolEntry*& slot = ring[next_seq % ring.size()];
          if (slot != nullptr && slot->sequence_ == next_seq) {
            e = std::exchange(slot, nullptr);
            ++next_seq;
            break;
          }
          if (driver_done && next_seq == created) break;
        } else {
          if (!done_fifo.empty()) {
            e = done_fifo.front();
            done_fifo.erase(done_fifo.begin());
            break;
          }
          if (driver_done && inflight == 0) break;
        }
        cv.wait(lock);
      }
      if (e == nullptr && driver_error) std::rethrow_exception(std::exchange(driver_error, nullptr));
    }
    consumer_wait_ns += now_ns() - t0;
    if (e == nullptr) return false;
    if (e->error) {
      std::exception_ptr err = e->error;
      pool->release(e, false);
      std::rethrow_exception(err);
    }
    {
      std::lock_guard lock(pool->mu);
      ++pool->held;
    }
    out->pool_ = pool;
    out->batch_ = e;
    ++batches;
    samples += static_cast<uint64_t>(e->size_);
    if (cfg.options.guard) {
      for (const auto& w : guard.observe(e->data_, e->bytes(), e->labels_.data(), e->size_)) {
        log_warn(w);
        ++guard_warnings;
      }
    }
    return true;
  }
};

BatchIterator::BatchIterator(Config config) : impl_(std::make_unique<Impl>(std::move(config))) {}
BatchIterator::~BatchIterator() = default;

bool BatchIterator::next(BatchHandle* out) { return impl_->next(out); }

PipelineStats BatchIterator::stats() const {
  const Impl& im = *impl_;
  PipelineStats s;
  s.batches = im.batches.load();
  s.samples = im.samples.load();
  s.skipped_samples = im.skipped_samples.load();
  s.files_opened = im.cfg.counters->files_opened.load();
  s.records_read = im.cfg.counters->records_read.load();
  s.bytes_read = im.cfg.counters->bytes_read.load();
  s.cache_records = im.cfg.counters->cache_records.load();
  s.corrupt_records = im.cfg.counters->corrupt_skipped.load();
  for (int i = 0; i < im.threads; ++i) {
    const WorkerTimes& w = im.worker_times[static_cast<size_t>(i)];
    s.workers.parse_ns += w.parse_ns.load();
    s.workers.decode_ns += w.decode_ns.load();
    s.workers.augment_ns += w.augment_ns.load();
    s.workers.samples += w.samples.load();
    s.workers.bytes += w.bytes.load();
  }
  s.read_ns = im.read_ns.load();
  s.driver_wait_ns = im.driver_wait_ns.load();
  s.consumer_wait_ns = im.consumer_wait_ns.load();
  {
    std::lock_guard lock(im.pool->mu);
    s.buffers_allocated = im.pool->allocated;
  }
  s.pool_capacity = static_cast<int>(im.pool->capacity);
  s.guard_warnings = im.guard_warnings.load();
  return s;
}

const BatchSpec& BatchIterator::spec() const { return impl_->pool->spec; }
int BatchIterator::batch_size() const { return impl_->cfg.batch_size; }
int64_t BatchIterator::batches_per_epoch() const { return impl_->cfg.batches_per_epoch; }
int BatchIterator::num_threads() const { return impl_->threads; }

}  // namespace fastnn::pipeline
