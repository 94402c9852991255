// Ranks as threads on one GPU for the device head's tests (head_cuda_gpu_test.cpp): a barrier a failing
// rank can break, the world the threads meet in, and HeadCollectives over it (host copies, reduced in
// rank order). Tests only; CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/head/head_collectives.h"
#include "trainer/tensor.h"

namespace fastnn::head {

// A barrier that a failing thread can break: every thread waiting at it, and every later arrival,
// throws instead of waiting for a rank that will never come (std::barrier cannot be broken).
class BreakableBarrier {
 public:
  explicit BreakableBarrier(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(m_);
    if (broken_) throw Error("another rank of the test world failed");
    const uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || broken_; });
    if (generation_ == generation) throw Error("another rank of the test world failed");
  }
  void break_all() {
    std::lock_guard<std::mutex> lock(m_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int count_, arrived_ = 0;
  uint64_t generation_ = 0;
  bool broken_ = false;
};

// A world of device collectives for ranks that are threads on one GPU: each call waits for its rank's
// stream, meets the others, reads their buffers (host copies, reduced in rank order), writes its own
// result, and meets them again before anyone may reuse a buffer. A rank that throws calls fail(): the
// barrier breaks, so the others throw at their next meeting instead of blocking for ever, and
// rethrow_first() (after joining) raises the first error in the test's thread, not std::terminate in a
// rank's. (A rank that hangs inside a CUDA call, without throwing, still blocks the others.) Tests only.
class ThreadWorld {
 public:
  explicit ThreadWorld(int world) : world_(world), sync_(world), posted_(static_cast<size_t>(world)) {}
  int world() const { return world_; }
  void post(int rank, const void* p) {
    posted_[static_cast<size_t>(rank)] = p;
    sync_.arrive_and_wait();
  }
  const void* at(int rank) const { return posted_[static_cast<size_t>(rank)]; }
  void done() { sync_.arrive_and_wait(); }

  // In a rank's catch block: keeps the first error and breaks the barrier.
  void fail(int rank) {
    std::string what = "an exception that is not a std::exception";
    try {
      throw;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      if (first_error_.empty()) first_error_ = str("rank ", rank, " of ", world_, ": ", what);
    }
    sync_.break_all();
  }
  // After every rank's thread has joined: Error with the first failure, if any.
  void rethrow_first() const {
    if (!first_error_.empty()) throw Error(first_error_);
  }

 private:
  int world_;
  BreakableBarrier sync_;
  std::vector<const void*> posted_;
  std::mutex m_;
  std::string first_error_;
};

class ThreadCollectives final : public HeadCollectives {
 public:
  ThreadCollectives(ThreadWorld& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return w_.world(); }
  void wait(void* stream) override { CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

  void allgather(const void* send, void* recv, size_t count, DType type, void* stream) override {
    wait(stream);
    w_.post(rank_, send);
    const size_t bytes = count * dtype_size(type);
    for (int q = 0; q < w_.world(); ++q)
      CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(recv) + q * bytes, w_.at(q), bytes, cudaMemcpyDeviceToDevice,
                                 static_cast<cudaStream_t>(stream)));
    wait(stream);
    w_.done();
  }
  void allreduce_sum(void* data, size_t count, DType type, void* stream) override {
    reduce(data, data, count, 0, type, stream, false);
  }
  void allreduce_max(void* data, size_t count, DType type, void* stream) override {
    reduce(data, data, count, 0, type, stream, true);
  }
  void reduce_scatter_sum(const void* send, void* recv, size_t recv_count, DType type, void* stream) override {
    reduce(send, recv, recv_count, static_cast<size_t>(rank_) * recv_count, type, stream, false);
  }

 private:
  // recv[0, count) = the sum (or max) over ranks of their send[offset, offset + count).
  void reduce(const void* send, void* recv, size_t count, size_t offset, DType type, void* stream, bool max) {
    wait(stream);
    w_.post(rank_, send);
    if (type == DType::kF32) reduce_as<float>(recv, count, offset, stream, max);
    else if (type == DType::kF64) reduce_as<double>(recv, count, offset, stream, max);
    else reduce_as<int64_t>(recv, count, offset, stream, max);
  }
  template <typename T>
  void reduce_as(void* recv, size_t count, size_t offset, void* stream, bool max) {
    std::vector<T> acc, part(count);
    for (int q = 0; q < w_.world(); ++q) {
      CUDA_CHECK(cudaMemcpy(part.data(), static_cast<const T*>(w_.at(q)) + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
      if (q == 0) acc = part;
      else for (size_t i = 0; i < count; ++i) acc[i] = max ? std::max(acc[i], part[i]) : acc[i] + part[i];
    }
    w_.done();  // every rank has read every buffer: now results may overwrite them
    CUDA_CHECK(cudaMemcpyAsync(recv, acc.data(), count * sizeof(T), cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
    wait(stream);
    w_.done();
  }

  ThreadWorld& w_;
  int rank_;
};

}  // namespace fastnn::head
