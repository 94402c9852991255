// Dynamic micro-batching for `fastnn serve`: many request threads hand in images, one worker thread runs
// them through the model in batches.
//
// submit() queues a request's items (all or none) and returns a Ticket the request thread waits on. The
// worker takes the oldest queued item, then waits up to max_delay for more until it holds max_batch
// items (or the delay passes), and calls `process` once with them, in queue order; a batch may mix items
// of several requests and a request's items may span batches. `process` fills one Outcome per item;
// if it throws, every item of that batch gets the exception's message as its error (`failed`).
// Bounded: at most queue_capacity items wait (not counting the batch being processed); submit() returns
// null when the request's items do not fit (the server answers 503) or after stop() has begun.
// stop(): no new submissions; everything already queued is processed, then the worker exits (joined).
// cancel(why): no new submissions; every queued item fails at once with `why` (Outcome::cancelled), the
// batch being processed finishes: a stop that must not wait for a long queue to drain.
// Threading: submit() and Ticket::wait() from any threads; `process` runs only on the worker thread,
// so it may own single-threaded state (the Predictor).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "trainer/inference/predictor.h"

namespace fastnn::serve {

struct Outcome {
  bool done = false;
  bool failed = false;  // the whole batch failed (process threw): a server error, not the input's fault
  bool cancelled = false;  // never processed: the batcher was cancelled
  std::string error;    // non-empty: this item got no prediction (bad image, or failed)
  inference::Prediction prediction;
};

struct BatcherOptions {
  int max_batch = 32;
  std::chrono::microseconds max_delay{0};  // 0: run what is queued at once (batches still form under load)
  int queue_capacity = 256;  // items
};

struct BatchStats {
  int64_t batches = 0, items = 0, largest = 0;
};

class Ticket {
 public:
  // Blocks until every item is processed; the outcomes are in submission order.
  const std::vector<Outcome>& wait();

 private:
  friend class Batcher;
  std::vector<inference::InputItem> items_;
  std::vector<Outcome> outcomes_;
  size_t remaining_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

class Batcher {
 public:
  // items[i] → (*outcomes)[i]; items.size() <= max_batch.
  using Process = std::function<void(std::span<const inference::InputItem* const> items, std::span<Outcome* const> outcomes)>;

  Batcher(const BatcherOptions& options, Process process);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Null when the queue cannot take all of `items` now, or when stopping. Empty `items`: a done ticket.
  std::shared_ptr<Ticket> submit(std::vector<inference::InputItem> items);
  void stop();
  void cancel(const std::string& why);

  size_t queued() const;  // items waiting
  BatchStats stats() const;
  const BatcherOptions& options() const { return options_; }

 private:
  struct Slot {
    std::shared_ptr<Ticket> ticket;
    size_t index;
  };
  void run();
  static void finish(Slot& slot);

  BatcherOptions options_;
  Process process_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Slot> queue_;
  bool stopping_ = false;
  BatchStats stats_;
  std::thread worker_;
};

}  // namespace fastnn::serve
