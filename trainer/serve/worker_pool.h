// The handler threads of `fastnn serve`: a fixed number of threads taking complete requests (event_loop.h
// hands them over) in arrival order. A handler may block (it waits for the batcher), so these are plain
// threads, not oneTBB tasks.
// push() never blocks: the queue needs no bound of its own, as each connection has at most one request
// out at a time (it is bounded by --max_connections). stop(): the jobs not started are dropped, each
// thread finishes the one it runs, the threads are joined. Idempotent; push() after stop() drops the job.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "trainer/serve/event_loop.h"

namespace fastnn::serve {

class WorkerPool {
 public:
  using Work = std::function<void(Exchange&)>;
  WorkerPool(int threads, Work work);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void push(Exchange job);
  void stop();

 private:
  void run();

  Work work_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Exchange> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace fastnn::serve
