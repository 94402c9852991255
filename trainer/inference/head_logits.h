// The classifier head's logits for inference (predict, serve): an embedding model (trainer/head,
// docs/LARGE_SCALE.md) has no logits layer; its classes are the head's rows, and a new image's logits
// are what the head computes for a class that is not the label:
//   plain softmax heads (loss_type softmax / dist_softmax with emb_dim): z_c = x . w_c
//   margin heads (arcface, cosface, their dist_ forms, the combined margin): z_c = s * cos(x, w_c)
// (margin.h: non_target_logit — the margin only ever applies to the known label in training, so
// inference and `fastnn eval` rank classes by the cosine). The rows are the whole [classes, emb_dim]
// head, re-assembled from a sharded checkpoint's row files by the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/config/job_config.h"
#include "trainer/head/margin.h"

namespace fastnn::inference {

class HeadLogits {
 public:
  // rows: classes x emb_dim floats, row-major (moved in).
  HeadLogits(std::vector<float> rows, int64_t classes, int64_t emb_dim, const head::MarginSpec& spec);

  int64_t classes() const { return classes_; }
  int64_t emb_dim() const { return emb_dim_; }
  const head::MarginSpec& spec() const { return spec_; }
  // The rows as the logits use them: each divided by its length for a normalised head (a zero row
  // stays zero), as they are for a plain one. For an exported model (ONNX), which computes
  // s * clip(normalise(x) . row, -1, 1) or x . row from them.
  std::vector<float> effective_rows() const;
  // logits (n x classes) of n embeddings (n x emb_dim).
  void compute(const float* embeddings, int64_t n, float* logits) const;

 private:
  std::vector<float> rows_;
  std::vector<float> inv_norm_;  // 1 / |w_c| (normalised heads; a zero row gives 0)
  int64_t classes_, emb_dim_;
  head::MarginSpec spec_;
};

// An embedding model's class rows (docs/LARGE_SCALE.md): "Head/weights" [classes, emb_dim], a
// replicated head's array in the weights file, or a sharded head's rows re-assembled from its files.
// FormatError naming the checkpoint when they are missing or shaped otherwise than the run's config says.
std::unique_ptr<HeadLogits> load_head_logits(const checkpoint::LoadedCheckpoint& checkpoint, const JobConfig& config,
                                             int classes);

}  // namespace fastnn::inference
