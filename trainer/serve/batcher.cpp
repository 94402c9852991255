#include "trainer/serve/batcher.h"

#include <algorithm>
#include <exception>

#include "core/check.h"

namespace fastnn::serve {

const std::vector<Outcome>& Ticket::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return remaining_ == 0; });
  return outcomes_;
}

Batcher::Batcher(const BatcherOptions& options, Process process) : options_(options), process_(std::move(process)) {
  FASTNN_CHECK(options_.max_batch >= 1, "serve: max_batch must be at least 1, not ", options_.max_batch);
  FASTNN_CHECK(options_.queue_capacity >= 1, "serve: the queue must hold at least 1 item, not ", options_.queue_capacity);
  FASTNN_CHECK(options_.max_delay.count() >= 0, "serve: max_delay must not be negative");
  worker_ = std::thread([this] { run(); });
}

Batcher::~Batcher() { stop(); }

std::shared_ptr<Ticket> Batcher::submit(std::vector<inference::InputItem> items) {
  auto t = std::make_shared<Ticket>();
  t->outcomes_.resize(items.size());
  t->remaining_ = items.size();
  t->items_ = std::move(items);
  if (t->items_.empty()) return t;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() + t->items_.size() > static_cast<size_t>(options_.queue_capacity)) return nullptr;
    for (size_t i = 0; i < t->items_.size(); ++i) queue_.push_back({t, i});
  }
  cv_.notify_all();
  return t;
}

void Batcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

size_t Batcher::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

BatchStats Batcher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Batcher::run() {
  const auto max_batch = static_cast<size_t>(options_.max_batch);
  std::vector<Slot> batch;
  std::vector<const inference::InputItem*> items;
  std::vector<Outcome*> outcomes;
  for (;;) {
    batch.clear();
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      // The first item starts the clock: wait for more until the batch is full or the delay is over.
      // While stopping nothing more can arrive, so waiting would only delay the drain.
      const auto deadline = std::chrono::steady_clock::now() + options_.max_delay;
      cv_.wait_until(lock, deadline, [&] { return stopping_ || queue_.size() >= max_batch; });
      const size_t n = std::min(max_batch, queue_.size());
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      ++stats_.batches;
      stats_.items += static_cast<int64_t>(n);
      stats_.largest = std::max<int64_t>(stats_.largest, static_cast<int64_t>(n));
    }
    items.clear();
    outcomes.clear();
    for (Slot& s : batch) {
      items.push_back(&s.ticket->items_[s.index]);
      outcomes.push_back(&s.ticket->outcomes_[s.index]);
    }
    try {
      process_(items, outcomes);
    } catch (const std::exception& e) {
      for (Outcome* o : outcomes) {
        o->failed = true;
        o->error = e.what();
        if (o->error.empty()) o->error = "inference failed";
      }
    }
    for (Slot& s : batch) finish(s);
  }
}

void Batcher::finish(Slot& s) {
  Ticket& t = *s.ticket;
  bool last;
  {
    std::lock_guard lock(t.mu_);
    t.outcomes_[s.index].done = true;
    last = --t.remaining_ == 0;
  }
  if (last) t.cv_.notify_all();
}

void Batcher::cancel(const std::string& why) {
  std::deque<Slot> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (Slot& s : dropped) {
    Outcome& o = s.ticket->outcomes_[s.index];
    o.cancelled = true;
    o.error = why;
    finish(s);
  }
}

}  // namespace fastnn::serve
