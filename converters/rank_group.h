// The processes of one conversion started by mpirun (docs/FORMATS.md "Converting on many machines").
//
// Every rank builds the whole index (a scan's costly per-file pass is split over the ranks and its
// results exchanged: share_items) and computes the same plan (the planner is a pure function of the
// index and the options); the ranks check that they agree, then each writes the shards dealt to it, as
// temporaries in the one output folder every rank sees. Rank 0 owns that folder: it cleans it up before
// the work, writes labels.txt and manifest.json from every rank's outcomes, and renames everything into
// place only after every rank said it succeeded. So the same seed gives byte-identical files for any
// number of ranks and threads, and a failure anywhere leaves nothing final-named.
//
// RankGroup is the little the converter needs from MPI (cli/ adapts the trainer's Communicator, so the
// converters link no MPI). The helpers below are the steps run_conversion and `fastnn check` take with it.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "converters/planner.h"
#include "converters/shard_writer.h"
#include "converters/source.h"
#include "core/check.h"

namespace fastnn::converters {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_size() const = 0;  // ranks on this machine (they share its cores)
  // Every rank's string, in rank order, on every rank. Every rank calls it, in the same order. Only
  // exchange() calls it (below).
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // Ends every rank of the job at once (mpirun kills the others).
  [[noreturn]] virtual void abort(int code) = 0;

  // Whether an exchange has failed: every rank is then unwinding, and no rank exchanges again.
  bool failed() const { return failed_; }
  void set_failed() { failed_ = true; }

 private:
  bool failed_ = false;
};

// A failure another rank reported: rank 0 has printed it, so this rank only exits non-zero.
class OtherRankFailed : public Error {
 public:
  using Error::Error;
};

// The one collective of a conversion: every rank produces its string (`produce` may throw) and receives
// every rank's, in rank order. A failure travels in place of the data, so whichever step a rank failed
// in, the ranks fail together at the same exchange: rank 0 throws an error of the first failure's kind
// naming the failed ranks and their messages (the same failure on every rank: said once, as one
// process would), every other rank throws OtherRankFailed. A rank that fails between exchanges joins
// the others' next exchange with its failure (run_settled), so the exchanges always pair up.
std::vector<std::string> exchange(RankGroup& group, const std::function<std::string()>& produce);

// Every rank says whether its part of a step failed (`mine` null: it did not); returns normally on every
// rank only when every rank succeeded (exchange() of nothing).
void settle(RankGroup& group, std::exception_ptr mine);

// Runs `phase` on this rank, then settle()s the outcome with the others. An exchange that failed inside
// `phase` is not settled again.
template <typename Fn>
void run_settled(RankGroup& group, Fn&& phase) {
  std::exception_ptr failure;
  try {
    phase();
  } catch (...) {
    if (group.failed()) throw;
    failure = std::current_exception();
  }
  settle(group, failure);
}

// run_settled under mpirun; `phase` alone without a group (null).
template <typename Fn>
void run_step(RankGroup* group, Fn&& phase) {
  if (group) run_settled(*group, phase);
  else phase();
}

// Work item i of n belongs to rank i mod size; each rank has filled its items of `items` (the others
// are ignored), and afterwards every rank holds every item. A settled exchange.
void share_items(RankGroup& group, std::vector<std::string>& items);

// Bytes for share_items: numbers and strings appended, read back in the same order. A short or
// malformed item is an Error (never an out-of-bounds read).
class ItemWriter {
 public:
  ItemWriter& u64(uint64_t v);
  ItemWriter& text(std::string_view s);  // length-prefixed
  template <typename T>
  ItemWriter& pods(const std::vector<T>& v) {  // trivially copyable elements, count-prefixed
    u64(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ItemReader {
 public:
  explicit ItemReader(std::string_view in) : in_(in) {}
  uint64_t u64();
  std::string text();
  template <typename T>
  std::vector<T> pods() {
    const uint64_t n = u64();
    FASTNN_CHECK(n <= (in_.size() - at_) / sizeof(T), "shared item: ", n, " elements do not fit");
    std::vector<T> v(n);
    std::memcpy(v.data(), in_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  std::string_view in_;
  size_t at_ = 0;
};

// Proves that every rank sees rank 0's output folder `dir` (created by rank 0): rank 0 writes a token
// there and each rank reads it back. ConfigError on a rank that does not (its own file system).
void check_shared_folder(RankGroup& group, const std::string& dir);

// A checksum of what the plan was made from and of the plan itself: equal on every rank, or the ranks
// saw different inputs (ConfigError, settled).
uint32_t plan_fingerprint(const DatasetIndex& index, const std::vector<ShardPlan>& plans);
void check_same_plan(RankGroup& group, uint32_t fingerprint);

// The rank that writes job `position` of the jobs in start order: dealt round robin, so every rank gets
// shards of every split and the same record count within one shard's worth.
inline int job_owner(size_t position, int ranks) { return static_cast<int>(position % static_cast<size_t>(ranks)); }

// Each rank's written jobs (by index into the full job list) → every job's outcome on every rank.
std::string encode_outcomes(const std::vector<size_t>& jobs, const std::vector<ShardOutcome>& outcomes);
std::vector<ShardOutcome> gather_outcomes(RankGroup& group, const std::string& mine, size_t num_jobs);

}  // namespace fastnn::converters
