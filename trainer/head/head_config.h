// From the job config to the classifier head (docs/LARGE_SCALE.md): whether the run uses one, the
// embedding net in front of it, and its options.
//
// The head replaces the model's own softmax when loss_type is not "softmax" (arcface, cosface, dist_*)
// or when emb_dim is set explicitly. The zoo net is then built with emb_dim outputs in place of the
// classes (its last fully connected layer becomes the embedding layer) and a batch norm over those
// outputs, "Embedding/BatchNorm", is appended as the net's output: the embedding.
#pragma once

#include <cstdint>

#include "schemas/job_config.pb.h"
#include "schemas/net.pb.h"
#include "trainer/head/classifier_head.h"

namespace fastnn::head {

bool uses_head(const JobConfig& config);
// ConfigError for an invalid head configuration (emb_dim < 1, sample_ratio outside (0, 1], margins).
void check_head_config(const JobConfig& config);
// The net's output width: emb_dim with a head, else the number of classes.
int64_t net_outputs(const JobConfig& config, int64_t num_classes);
// Appends the embedding batch norm to a zoo net built with emb_dim outputs.
NetDef with_embedding(NetDef net);
// The head's options for `num_classes` classes; `seed` initialises its rows (the job's seed, the same
// on every rank).
HeadOptions head_options(const JobConfig& config, int64_t num_classes, uint64_t seed);

}  // namespace fastnn::head
