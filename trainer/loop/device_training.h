// `fastnn train` on a GPU (device=cuda, or auto with a GPU): the loop of trainer.cpp driven through a
// StepRunner (step_runner.h), for one process. run_training() calls it when the config resolves to
// cuda; the CPU and data-parallel loop stay in trainer.cpp.
//
// Same as the CPU loop: model, pipelines, LR schedule and total steps (run_setup.h); weight decay,
// clipping and the update in FastNN's order (on the device); LoggingTensorHook lines, metrics.jsonl and
// TensorBoard scalars (plus train/loss_scale under fp16); evaluation every eval_every_n_steps and at
// the end; CheckpointSaverHook checkpoints whose weights are the f32 master values and whose optimizer
// state has the CPU optimizer's names, so a GPU checkpoint evaluates and fine-tunes on the CPU.
// Data parallel (mpirun -np N, one GPU per rank from the local rank): each rank reads its shards,
// gradients are averaged over NCCL (nccl_collectives.h; comm_backend=nccl takes that path with one
// process too), the step's metrics over the host communicator, rank 0's initial weights broadcast,
// batch-norm statistics averaged before evaluation and checkpoints, rank 0 alone writes outputs.
// Not yet (ConfigError / warning): --resume and task_type=finetune on the GPU, ProfilerHook.
#pragma once

#include "schemas/job_config.pb.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/loop/trainer.h"

namespace fastnn::loop {

TrainSummary run_device_training(const JobConfig& config, const TrainOptions& options, DataParallel& dp);

}  // namespace fastnn::loop
