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
#include <vector>

#include "trainer/head/margin.h"

namespace fastnn::inference {

class HeadLogits {
 public:
  // rows: classes x emb_dim floats, row-major (moved in).
  HeadLogits(std::vector<float> rows, int64_t classes, int64_t emb_dim, const head::MarginSpec& spec);

  int64_t classes() const { return classes_; }
  int64_t emb_dim() const { return emb_dim_; }
  // logits (n x classes) of n embeddings (n x emb_dim).
  void compute(const float* embeddings, int64_t n, float* logits) const;

 private:
  std::vector<float> rows_;
  std::vector<float> inv_norm_;  // 1 / |w_c| (normalised heads; a zero row gives 0)
  int64_t classes_, emb_dim_;
  head::MarginSpec spec_;
};

}  // namespace fastnn::inference
