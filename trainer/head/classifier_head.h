// The classifier head after an embedding: a fully connected layer without bias (one weight row per
// class) and the softmax cross-entropy (plain, or a margin softmax on cosine logits), over a world of
// ranks whose class rows are split between them (PLSC's dist_softmax / dist_arcface; docs/LARGE_SCALE.md).
//
//   ClassifierHead<float> h({.num_classes = K, .emb_dim = D, .margin = spec, .sharded = true}, &comm);
//   HeadResult r = h.train(features, labels, n, step, dfeatures);   // this rank's n samples
//   ... h.gradients() now holds dLoss/dW for this rank's rows (or the sampled ones, see PartialFC) ...
//
// Sharded (options.sharded, a world of W ranks): rank r owns classes [row_begin, row_end) (class_range:
// sizes differ by at most one). Every rank's features and labels are all-gathered into the global
// batch of N = W * n rows; each rank computes its logits shard [N, rows]; the softmax normaliser per
// row comes from two allreduces of N values (the maximum, then the sum of exp and the target logit);
// the feature gradient of the global batch is summed over ranks by a reduce-scatter that hands each
// rank its own samples' rows. The weights and their gradients never leave the rank. Not sharded:
// every rank holds all K rows and computes on its own n samples only (comm may be null); the caller
// averages the weight gradient with the backbone's.
//
// Loss: the mean over the global batch (sharded) or the local batch, so one process with batch N and
// W ranks with batch N / W train the same model: the feature gradient handed back is multiplied by W,
// because the caller averages the backbone's gradients over the W ranks.
//
// Logits: plain (margin.normalized == false): x . w_c. Normalized: cos = x/|x| . w_c/|w_c|, s*cos for
// every class but the label, s*psi(cos) (margin.h) for the label. Softmax, its normaliser and every
// sum are computed in double whatever T is.
//
// Accuracy: top-1 / top-5 of this rank's samples from the margin-free logits (s*cos or x . w),
// each rank's per-row top 5 all-gathered and merged (ties: the lower class id wins), never the whole
// probability matrix.
//
// PartialFC (options.sample_ratio < 1, training only): at each step only the classes of
// sample_classes(seed, step, ...) (every label of the global batch plus a rank-independent sample of
// the others) enter the softmax; gradients() then holds one row per sampled class, in the order of
// sampled_rows() (local row indices). evaluate() always uses every class.
//
// T is float (training) or double (exactness tests). GEMMs through OpenBLAS. Not thread-safe.
// Errors: Error for a label outside [0, K), a mismatched batch or a world whose ranks disagree.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/head/margin.h"

namespace fastnn::head {

struct HeadOptions {
  int64_t num_classes = 0;
  int64_t emb_dim = 0;
  MarginSpec margin;
  bool sharded = false;
  double sample_ratio = 1.0;
  uint64_t seed = 0;  // weight initialisation and PartialFC's samples
  // Tests: use the PartialFC code path even at sample_ratio 1 (it must equal the full head).
  bool force_sampled_path = false;
};

struct HeadResult {
  double loss = 0;  // mean over the loss's batch (see above)
  int64_t correct = 0, correct_top5 = 0, examples = 0;  // this rank's samples
};

// Checks `options` (Error for no classes or embedding, a sample_ratio outside (0, 1]) and returns the
// rows [begin, end) rank `rank` of `world` holds: class_range when sharded, every class otherwise.
std::pair<int64_t, int64_t> head_rows(const HeadOptions& options, int world, int rank);

template <typename T>
class ClassifierHead {
 public:
  // comm: the world (null or one rank: a single process); must outlive the head.
  ClassifierHead(const HeadOptions& options, Communicator* comm);

  int64_t row_begin() const { return row_begin_; }
  int64_t row_end() const { return row_end_; }
  int64_t rows() const { return row_end_ - row_begin_; }
  int64_t emb_dim() const { return o_.emb_dim; }
  const HeadOptions& options() const { return o_; }

  // This rank's rows [rows, emb_dim], row-major. Initialised from (seed, global class id) with Xavier's
  // uniform bound sqrt(6 / (emb_dim + num_classes)), so the values do not depend on the number of ranks.
  std::span<T> weights() { return weights_; }
  // dLoss/dW after train(): [rows, emb_dim], or [sampled_rows().size(), emb_dim] on the PartialFC path.
  std::span<T> gradients() { return grads_; }
  // Local row indices of gradients()' rows on the PartialFC path (empty on the full path).
  const std::vector<int64_t>& sampled_rows() const { return sampled_; }
  bool sampled_path() const { return o_.sample_ratio < 1.0 || o_.force_sampled_path; }

  // features [n, emb_dim] of this rank's samples, labels [n]; writes dLoss/dfeatures [n, emb_dim].
  HeadResult train(const T* features, const int64_t* labels, int64_t n, uint64_t step, T* dfeatures);
  // Loss (with the margin, as train's) and top-1/top-5; no gradients.
  HeadResult evaluate(const T* features, const int64_t* labels, int64_t n);
  // evaluate() for a batch every rank holds the same (a sharded head's evaluation: every rank runs the
  // whole held-out set): nothing is gathered, the counts are the whole batch's, the same on every rank.
  HeadResult evaluate_shared(const T* features, const int64_t* labels, int64_t n);
  // The margin-free logits of this rank's rows for its own n samples when not sharded, or for the
  // global batch when sharded: [N, rows] (prediction and tests).
  std::vector<T> logits(const T* features, int64_t n);

 private:
  struct Batch;
  Batch gather(const T* features, const int64_t* labels, int64_t n, bool shared);
  HeadResult run(const T* features, const int64_t* labels, int64_t n, uint64_t step, T* dfeatures, bool shared);

  HeadOptions o_;
  Communicator* comm_;
  int world_ = 1, rank_ = 0;
  int64_t row_begin_ = 0, row_end_ = 0;
  std::vector<T> weights_, grads_;
  std::vector<int64_t> sampled_;
};

extern template class ClassifierHead<float>;
extern template class ClassifierHead<double>;

}  // namespace fastnn::head
