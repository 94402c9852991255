// Data-parallel training: what the loop (trainer.cpp) needs from the world of ranks, kept in one place
// so that the loop only has small hook calls (docs/DISTRIBUTED.md). The gradient average itself belongs
// to the step runner (step_runner.h: BucketedAllreduce over this communicator on the CPU, NCCL buckets
// on the GPU), as do the broadcast of rank 0's variables and the average of the batch-norm statistics.
//
// One process per rank; every rank holds the whole model and trains on its own share of the data:
//   - the communicator comes from make_communicator({comm_backend, collective_timeout_seconds}):
//     MPI when the process was started by mpirun/srun, else a world of one (every call below is then
//     a no-op or the single-process behaviour, bitwise);
//   - batch_size is per rank: a step consumes world x batch_size examples (the global batch);
//   - check_world(): the pre-flight check_world_consistency (equal per-rank epoch lengths, a shard
//     count that divides over the ranks); a failure is raised on every rank alike ("agreed");
//   - sync_start(): after init / checkpoint load every rank must be at the same step (the runner's
//     broadcast_variables() then gives every rank rank 0's variables);
//   - average_metrics(): the step's metrics (loss, hits, examples, data wait) averaged over the ranks,
//     so every rank logs the global numbers and makes the same divergence decision;
//   - sync_batch_norm(): with sync_batch_norm, the graph's batch norms take their training statistics
//     over every rank's batch (ops::CrossReplicaSum over the communicator; CPU backend);
//   - evaluate(): each rank evaluates whole files of the held-out split (file i goes to rank
//     i % world), the sums are allreduced, so every example counts exactly once; with a collective
//     evaluation (a sharded classifier head, StepRunner::collective_evaluation) every rank evaluates
//     the whole split, batch by batch together, and gets the same result;
//   - stop_requested(): SIGTERM/SIGINT (stop_signal.h) agreed over ranks: the flag rides in the step
//     metrics of average_metrics(), so it is true on every rank after the same step;
//   - the constructor compares every rank's job configuration and sync_start() the model's variable
//     names and shapes (trainer/comm/world_check.h), both agreed errors naming fields/variables;
//   - fail(): an exception on one rank would leave the others blocked in the next collective, so it is
//     logged and the job is aborted (MPI_Abort), unless it was an agreed error every rank raises.
// rank_seed(): rank 0 keeps the configured seed (a world of one trains exactly as before); other
// ranks draw dropout masks, shuffling and augmentation from their own streams.
//
// Threading: the loop's thread only (collectives are called in the same order on every rank).
// Errors: ConfigError for an inconsistent world (agreed), fastnn::Error from the communicator.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "schemas/checkpoint_meta.pb.h"
#include "schemas/job_config.pb.h"
#include "trainer/comm/communicator.h"
#include "trainer/graph/graph.h"
#include "trainer/loop/evaluate.h"
#include "trainer/loop/run_setup.h"
#include "trainer/train_step.h"

namespace fastnn::loop {

uint64_t rank_seed(uint64_t seed, int rank);

// Per-rank batches to replay when resuming from `meta` in a world of `world` ranks with batch_size
// `batch` and `batches_per_epoch` per rank: the checkpoint's global step when the global batch is
// unchanged, else its epoch plus the samples seen in that epoch, in the new global batch size.
int64_t resume_replay_batches(const CheckpointMeta& meta, int world, int64_t batch, int64_t batches_per_epoch);

class DataParallel {
 public:
  explicit DataParallel(const JobConfig& config);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  Communicator& comm() { return *comm_; }
  int rank() const { return comm_->rank(); }
  int world() const { return comm_->world_size(); }
  bool chief() const { return rank() == 0; }

  void check_world(int64_t batches_per_epoch, int64_t train_shard_count);
  void sync_start(const graph::Graph& graph, int64_t start_step);
  void average_metrics(StepResult& result, double& data_wait_seconds);
  // Hands the graph a CrossReplicaSum over this world (a world of one: nothing to do).
  void sync_batch_norm(graph::Graph& graph);
  // Through `evaluate_batch` (a step runner); the caller has averaged the batch-norm statistics
  // (StepRunner::average_state). With `logits`, the confusion matrix too, summed over the ranks (none
  // when a rank that evaluated examples could not count one), and the most confident mistakes of all.
  EvalResult evaluate(graph::Graph& graph, const EvalBatchFn& evaluate_batch, const RunSetup& setup,
                      const JobConfig& config, bool collective = false, const EvalLogitsFn& logits = {});
  // After average_metrics(): a stop was asked for on any rank (a world of one: here).
  bool stop_requested() const;
  // A time-based checkpoint (save_checkpoints_secs): the chief says whether one is due by its clock;
  // the flag travels with the next step's metrics, so after that average_metrics() save_due() is the
  // same on every rank at the same step.
  void want_save(bool due) { save_wanted_ = due; }
  bool save_due() const { return save_due_; }
  void fail(const std::exception& error) noexcept;

 private:
  std::vector<MisclassifiedImage> gather_misclassified(const std::vector<MisclassifiedImage>& local,
                                                       const pipeline::FileList& files);
  template <typename F>
  void agreed(F&& check);  // runs a collective check whose ConfigError every rank raises alike

  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<ops::CrossReplicaSum> replica_sum_;
  bool agreed_failure_ = false;
  bool stop_ = false;
  bool save_wanted_ = false, save_due_ = false;
};

}  // namespace fastnn::loop
