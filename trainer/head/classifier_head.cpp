#include "trainer/head/classifier_head.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/check.h"
#include "trainer/head/head_math.h"
#include "trainer/head/head_memory.h"
#include "trainer/head/partial_fc.h"
#include "trainer/ops/cpu_kernel.h"

namespace fastnn::head {
namespace {

// Rows this short are not worth a normalisation guard: |x| below it counts as this (no NaN for a zero
// embedding; its gradient is then that of x / kTinyNorm).
constexpr double kTinyNorm = 1e-12;
// Columns per parallel GEMM block: the blocks are independent, so the result does not depend on the
// number of threads.
constexpr int64_t kColumnBlock = 4096;

// C[m, cols] (+)= A[m, k] . B[cols, k]^T, in column blocks over oneTBB workers.
template <typename T>
void gemm_nt_blocked(int64_t m, int64_t cols, int64_t k, const T* a, const T* b, T* c) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, cols, kColumnBlock), [&](const tbb::blocked_range<int64_t>& r) {
    ops::cpu::gemm(false, true, m, r.end() - r.begin(), k, T(1), a, k, b + r.begin() * k, k, T(0), c + r.begin(), cols);
  });
}

// C[cols, k] = G[m, cols]^T . X[m, k], in row blocks of C.
template <typename T>
void gemm_tn_blocked(int64_t m, int64_t cols, int64_t k, const T* g, const T* x, T* c) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, cols, kColumnBlock), [&](const tbb::blocked_range<int64_t>& r) {
    ops::cpu::gemm(true, false, r.end() - r.begin(), k, m, T(1), g + r.begin(), cols, x, k, T(0), c + r.begin() * k, k);
  });
}

// 1/|row| per row of in[rows, dim]; with `out`, also the rows scaled to unit length.
template <typename T>
std::vector<double> inverse_norms(const T* in, int64_t rows, int64_t dim, T* out = nullptr) {
  std::vector<double> inv(static_cast<size_t>(rows));
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t i) {
    double ss = 0;
    for (int64_t d = 0; d < dim; ++d) ss += static_cast<double>(in[i * dim + d]) * in[i * dim + d];
    const double v = 1.0 / std::max(std::sqrt(ss), kTinyNorm);
    inv[static_cast<size_t>(i)] = v;
    if (out)
      for (int64_t d = 0; d < dim; ++d) out[i * dim + d] = static_cast<T>(in[i * dim + d] * v);
  });
  return inv;
}

// Backward of u = v/|v| (v given raw, inv = 1/|v|), in place on g: (g - u (u . g)) / |v|, times `extra`.
template <typename T>
void normalize_backward(const T* v, const std::vector<double>& inv, int64_t rows, int64_t dim, T* g, double extra) {
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t i) {
    const double iv = inv[static_cast<size_t>(i)];
    double dot = 0;
    for (int64_t d = 0; d < dim; ++d) dot += static_cast<double>(v[i * dim + d]) * g[i * dim + d];
    dot *= iv;  // u . g
    for (int64_t d = 0; d < dim; ++d)
      g[i * dim + d] = static_cast<T>((g[i * dim + d] - v[i * dim + d] * iv * dot) * iv * extra);
  });
}

// z[i, j] *= inv[j] * factor for every row: the cosine logits' 1/|w_j| (and scale), applied to z instead
// of normalising a copy of W.
template <typename T>
void scale_columns(std::vector<T>& z, int64_t rows, int64_t cols, const std::vector<double>& inv, double factor) {
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t i) {
    for (int64_t j = 0; j < cols; ++j) {
      T& v = z[static_cast<size_t>(i * cols + j)];
      v = static_cast<T>(factor * (v * inv[static_cast<size_t>(j)]));
    }
  });
}

}  // namespace

std::pair<int64_t, int64_t> head_rows(const HeadOptions& o, int world, int rank) {
  FASTNN_CHECK(o.num_classes >= 1 && o.emb_dim >= 1, "classifier head needs classes and an embedding, got ",
               o.num_classes, " x ", o.emb_dim);
  FASTNN_CHECK(o.sample_ratio > 0 && o.sample_ratio <= 1, "sample_ratio must be in (0, 1], got ", o.sample_ratio);
  if (!o.sharded) return {0, o.num_classes};
  return class_range(o.num_classes, world, rank);
}

template <typename T>
struct ClassifierHead<T>::Batch {
  int64_t n = 0;       // rows in the loss's batch (global when sharded)
  int64_t offset = 0;  // this rank's first row in it
  int64_t local = 0;   // this rank's samples
  std::vector<T> x;    // [n, D]
  std::vector<int64_t> labels;
};

template <typename T>
ClassifierHead<T>::ClassifierHead(const HeadOptions& o, Communicator* comm) : o_(o), comm_(comm) {
  if (comm_) {
    world_ = comm_->world_size();
    rank_ = comm_->rank();
  }
  std::tie(row_begin_, row_end_) = head_rows(o, world_, rank_);
  weights_.resize(static_cast<size_t>(rows() * o.emb_dim));
  const double bound = initial_weight_bound(o.emb_dim, o.num_classes);
  tbb::parallel_for(int64_t{0}, rows(), [&](int64_t r) {
    for (int64_t d = 0; d < o_.emb_dim; ++d)
      weights_[static_cast<size_t>(r * o_.emb_dim + d)] = static_cast<T>(initial_weight(o_.seed, row_begin_ + r, d, bound));
  });
  if (!sampled_path()) grads_.resize(weights_.size());
}

template <typename T>
typename ClassifierHead<T>::Batch ClassifierHead<T>::gather(const T* features, const int64_t* labels, int64_t n, bool shared) {
  const int64_t d = o_.emb_dim;
  Batch b;
  b.local = n;
  if (!o_.sharded || world_ == 1 || shared) {
    b.n = n;
    b.x.assign(features, features + n * d);
    b.labels.assign(labels, labels + n);
    return b;
  }
  // Every rank must bring the same batch size: allgather of the sizes first, so a mismatch is an
  // error here and not a hang inside the feature gather.
  std::vector<int64_t> sizes(static_cast<size_t>(world_));
  comm_->allgather(std::span<const int64_t>(&n, 1), std::span<int64_t>(sizes));
  for (int q = 0; q < world_; ++q)
    FASTNN_CHECK(sizes[static_cast<size_t>(q)] == n, "sharded head: rank ", q, " brought ", sizes[static_cast<size_t>(q)],
                 " samples, rank ", rank_, " brought ", n, "; every rank needs the same batch size");
  b.n = n * world_;
  b.offset = n * rank_;
  b.x.resize(static_cast<size_t>(b.n * d));
  b.labels.resize(static_cast<size_t>(b.n));
  comm_->allgather(std::span<const T>(features, static_cast<size_t>(n * d)), std::span<T>(b.x));
  comm_->allgather(std::span<const int64_t>(labels, static_cast<size_t>(n)), std::span<int64_t>(b.labels));
  return b;
}

template <typename T>
std::vector<T> ClassifierHead<T>::logits(const T* features, int64_t n) {
  std::vector<int64_t> zeros(static_cast<size_t>(n), 0);
  Batch b = gather(features, zeros.data(), n, false);
  const int64_t d = o_.emb_dim, m = rows();
  std::vector<T> xs = b.x;
  std::vector<T> z(static_cast<size_t>(b.n * m));
  if (!o_.margin.normalized) {
    gemm_nt_blocked(b.n, m, d, xs.data(), weights_.data(), z.data());
    return z;
  }
  inverse_norms(b.x.data(), b.n, d, xs.data());
  const std::vector<double> inv_w = inverse_norms(weights_.data(), m, d);
  gemm_nt_blocked(b.n, m, d, xs.data(), weights_.data(), z.data());
  scale_columns(z, b.n, m, inv_w, o_.margin.scale);
  return z;
}

template <typename T>
HeadResult ClassifierHead<T>::train(const T* features, const int64_t* labels, int64_t n, uint64_t step, T* dfeatures) {
  FASTNN_CHECK(dfeatures != nullptr, "train needs a feature gradient buffer");
  return run(features, labels, n, step, dfeatures, false);
}

template <typename T>
HeadResult ClassifierHead<T>::evaluate(const T* features, const int64_t* labels, int64_t n) {
  return run(features, labels, n, 0, nullptr, false);
}

template <typename T>
HeadResult ClassifierHead<T>::evaluate_shared(const T* features, const int64_t* labels, int64_t n) {
  return run(features, labels, n, 0, nullptr, true);
}

template <typename T>
HeadResult ClassifierHead<T>::run(const T* features, const int64_t* labels, int64_t n, uint64_t step, T* dfeatures,
                                  bool shared) {
  const bool training = dfeatures != nullptr;
  const bool sharded = o_.sharded && world_ > 1;
  const int64_t d = o_.emb_dim, k = o_.num_classes;
  Batch b = gather(features, labels, n, shared);
  for (int64_t i = 0; i < b.n; ++i)
    if (b.labels[static_cast<size_t>(i)] < 0 || b.labels[static_cast<size_t>(i)] >= k)
      throw Error(str("label ", b.labels[static_cast<size_t>(i)], " of sample ", i, " is outside 0..", k - 1));

  // The classes in play: every row, or PartialFC's sample (local row indices, ascending).
  const bool sampled = training && sampled_path();
  std::vector<int64_t> cols;
  if (sampled) {
    cols = sample_local_rows(o_.seed, step, row_begin_, row_end_, o_.sample_ratio, b.labels);
    sampled_ = cols;
  }
  const int64_t m = sampled ? static_cast<int64_t>(cols.size()) : rows();

  // Operands: the used weight rows (PartialFC: a compact copy of the sampled ones) and the batch. The
  // cosine losses use unit-length features and scale z's columns by 1/|w| instead of copying W.
  const MarginSpec& mg = o_.margin;
  std::vector<T> compact;
  if (sampled) {
    compact.resize(static_cast<size_t>(m * d));
    for (int64_t j = 0; j < m; ++j)
      std::copy_n(weights_.data() + cols[static_cast<size_t>(j)] * d, d, compact.data() + j * d);
  }
  const T* w = sampled ? compact.data() : weights_.data();
  std::vector<double> inv_w, inv_x;
  std::vector<T> xs = b.x;
  if (mg.normalized) {
    inv_w = inverse_norms(w, m, d);
    inv_x = inverse_norms(b.x.data(), b.n, d, xs.data());
  }
  std::vector<T> z(static_cast<size_t>(b.n * m));  // cos (normalized) or raw logits
  if (m > 0) gemm_nt_blocked(b.n, m, d, xs.data(), w, z.data());
  if (mg.normalized) scale_columns(z, b.n, m, inv_w, 1.0);

  // Per row: the target's column and logits, the maximum, then the sum of exp over every rank.
  const double s = mg.normalized ? mg.scale : 1.0;
  std::vector<int64_t> tcol(static_cast<size_t>(b.n));
  std::vector<double> tlogit(static_cast<size_t>(b.n), 0.0), tslope(static_cast<size_t>(b.n), 0.0);
  std::vector<double> rmax(static_cast<size_t>(b.n)), sums(2 * static_cast<size_t>(b.n));
  tbb::parallel_for(int64_t{0}, b.n, [&](int64_t i) {
    const size_t iu = static_cast<size_t>(i);
    const int64_t c = sampled ? sampled_target_column(b.labels[iu], row_begin_, row_end_, cols.data(), m)
                              : target_column(b.labels[iu], row_begin_, row_end_);
    tcol[iu] = c;
    if (c >= 0) {
      const double cz = static_cast<double>(z[static_cast<size_t>(i * m + c)]);
      if (mg.normalized) {
        const MarginValue v = target_logit(cz, mg);
        tlogit[iu] = v.logit;
        tslope[iu] = v.dlogit_dcos;
      } else {
        tlogit[iu] = cz;
        tslope[iu] = 1.0;
      }
    }
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < m; ++j) mx = std::max(mx, j == c ? tlogit[iu] : s * static_cast<double>(z[static_cast<size_t>(i * m + j)]));
    rmax[iu] = mx;
  });
  if (sharded) comm_->allreduce_max(std::span<double>(rmax));
  tbb::parallel_for(int64_t{0}, b.n, [&](int64_t i) {
    const size_t iu = static_cast<size_t>(i);
    double se = 0;
    for (int64_t j = 0; j < m; ++j)
      se += std::exp((j == tcol[iu] ? tlogit[iu] : s * static_cast<double>(z[static_cast<size_t>(i * m + j)])) - rmax[iu]);
    sums[iu] = se;
    sums[static_cast<size_t>(b.n) + iu] = tcol[iu] >= 0 ? tlogit[iu] : 0.0;  // exactly one rank owns the label
  });
  if (sharded) comm_->allreduce_sum(std::span<double>(sums));

  HeadResult r;
  r.examples = b.local;
  double loss = 0;
  for (int64_t i = 0; i < b.n; ++i)
    loss += std::log(sums[static_cast<size_t>(i)]) + rmax[static_cast<size_t>(i)] - sums[static_cast<size_t>(b.n + i)];
  r.loss = loss / static_cast<double>(b.n);

  // Accuracy of this rank's samples from the margin-free logits: each rank's per-row top 5 over its
  // classes, merged (evaluation uses every class; a PartialFC training step its sampled ones).
  std::vector<double> top(static_cast<size_t>(b.n * kTopK * 2));
  tbb::parallel_for(int64_t{0}, b.n, [&](int64_t i) {
    TopCandidates best;
    for (int64_t j = 0; j < m; ++j)
      best.offer(static_cast<double>(z[static_cast<size_t>(i * m + j)]), row_begin_ + (sampled ? cols[static_cast<size_t>(j)] : j));
    best.write(top.data() + i * kTopK * 2);
  });
  std::vector<double> all_top = top;
  if (sharded) {
    all_top.resize(top.size() * static_cast<size_t>(world_));
    comm_->allgather(std::span<const double>(top), std::span<double>(all_top));
  }
  const int sources = sharded ? world_ : 1;
  for (int64_t i = b.offset; i < b.offset + b.local; ++i) {
    const TopHits h = merged_hits(all_top.data(), sources, b.n, i, b.labels[static_cast<size_t>(i)]);
    r.correct += h.top1;
    r.correct_top5 += h.top5;
  }
  if (!training) return r;

  // dLoss/dz: (softmax - onehot) / N, times ds/dz (s, or the margin's slope at the target).
  const double inv_n = 1.0 / static_cast<double>(b.n);
  tbb::parallel_for(int64_t{0}, b.n, [&](int64_t i) {
    const size_t iu = static_cast<size_t>(i);
    const double norm = 1.0 / sums[iu];
    for (int64_t j = 0; j < m; ++j) {
      T& cell = z[static_cast<size_t>(i * m + j)];
      if (j == tcol[iu]) {
        cell = static_cast<T>((std::exp(tlogit[iu] - rmax[iu]) * norm - 1.0) * inv_n * tslope[iu]);
      } else {
        cell = static_cast<T>(std::exp(s * static_cast<double>(cell) - rmax[iu]) * norm * inv_n * s);
      }
    }
  });
  // Weight gradient of the used rows (d/dw of x^ . w/|w| for the cosine losses), then the feature
  // gradient of the loss's batch: dz . w^, with w^ = w/|w| folded into dz's columns.
  grads_.resize(static_cast<size_t>(m * d));
  if (m > 0) gemm_tn_blocked(b.n, m, d, z.data(), xs.data(), grads_.data());
  if (mg.normalized) {
    normalize_backward(w, inv_w, m, d, grads_.data(), 1.0);
    scale_columns(z, b.n, m, inv_w, 1.0);
  }
  std::vector<T> dx(static_cast<size_t>(b.n * d), T(0));
  if (m > 0) ops::cpu::gemm(false, false, b.n, d, m, T(1), z.data(), m, w, d, T(0), dx.data(), d);
  T* out = dfeatures;
  if (sharded) {
    comm_->reduce_scatter_sum(std::span<const T>(dx), std::span<T>(out, static_cast<size_t>(b.local * d)));
  } else {
    std::copy(dx.begin(), dx.end(), out);
  }
  // The caller averages the backbone's gradients over the ranks; the sharded loss is already the
  // global batch's mean, so its feature gradient is scaled back up by the world size.
  const double back = sharded ? static_cast<double>(world_) : 1.0;
  if (mg.normalized) {
    const std::vector<double> inv_local(inv_x.begin() + b.offset, inv_x.begin() + b.offset + b.local);
    normalize_backward(b.x.data() + b.offset * d, inv_local, b.local, d, out, back);
  } else if (back != 1.0) {
    for (int64_t i = 0; i < b.local * d; ++i) out[i] = static_cast<T>(out[i] * back);
  }
  return r;
}

template class ClassifierHead<float>;
template class ClassifierHead<double>;

}  // namespace fastnn::head
