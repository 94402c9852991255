// Threads standing in for the processes of `mpirun fastnn convert` (converters/rank_group.h), so that
// the converter tests split work over ranks without MPI.
#pragma once

#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "converters/rank_group.h"

namespace fastnn::converters::testing {

// The ranks of one job as threads; allgather is a slot per rank between two barriers.
class ThreadRanks {
 public:
  explicit ThreadRanks(int n) : n_(n), slots_(n), sync_(n) {}

  class Rank final : public RankGroup {
   public:
    Rank(ThreadRanks& job, int rank) : job_(job), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return job_.n_; }
    int local_size() const override { return job_.n_; }
    std::vector<std::string> allgather(const std::string& mine) override {
      job_.slots_[static_cast<size_t>(rank_)] = mine;
      job_.sync_.arrive_and_wait();
      std::vector<std::string> all = job_.slots_;
      job_.sync_.arrive_and_wait();
      return all;
    }
    [[noreturn]] void abort(int code) override {
      ADD_FAILURE() << "rank " << rank_ << " aborted the job with " << code;
      std::_Exit(code);
    }

   private:
    ThreadRanks& job_;
    int rank_;
  };

  // Runs fn(rank) on every rank at once; returns each rank's exception (null: none).
  std::vector<std::exception_ptr> run(const std::function<void(Rank&)>& fn) {
    std::vector<std::exception_ptr> errors(static_cast<size_t>(n_));
    std::vector<std::thread> threads;
    for (int r = 0; r < n_; ++r)
      threads.emplace_back([&, r] {
        Rank rank(*this, r);
        try {
          fn(rank);
        } catch (...) {
          errors[static_cast<size_t>(r)] = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    return errors;
  }

 private:
  int n_;
  std::vector<std::string> slots_;
  std::barrier<> sync_;
};

}  // namespace fastnn::converters::testing
