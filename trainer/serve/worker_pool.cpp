#include "trainer/serve/worker_pool.h"

#include "core/check.h"

namespace fastnn::serve {

WorkerPool::WorkerPool(int threads, Work work) : work_(std::move(work)) {
  FASTNN_CHECK(threads >= 1, "serve: threads must be at least 1, not ", threads);
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::push(Exchange job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void WorkerPool::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

void WorkerPool::run() {
  for (;;) {
    Exchange job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    work_(job);
  }
}

}  // namespace fastnn::serve
