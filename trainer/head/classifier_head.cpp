#include "trainer/head/classifier_head.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/check.h"
#include "trainer/head/head_memory.h"
#include "trainer/head/partial_fc.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/random.h"

namespace fastnn::head {
namespace {

constexpr int kTopK = 5;
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

struct Candidate {
  double value;
  int64_t cls;
};
bool better(const Candidate& a, const Candidate& b) { return a.value > b.value || (a.value == b.value && a.cls < b.cls); }

}  // namespace

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
  FASTNN_CHECK(o.num_classes >= 1 && o.emb_dim >= 1, "classifier head needs classes and an embedding, got ",
               o.num_classes, " x ", o.emb_dim);
  FASTNN_CHECK(o.sample_ratio > 0 && o.sample_ratio <= 1, "sample_ratio must be in (0, 1], got ", o.sample_ratio);
  if (o_.sharded) {
    std::tie(row_begin_, row_end_) = class_range(o.num_classes, world_, rank_);
  } else {
    row_begin_ = 0;
    row_end_ = o.num_classes;
  }
  weights_.resize(static_cast<size_t>(rows() * o.emb_dim));
  const double bound = std::sqrt(6.0 / static_cast<double>(o.emb_dim + o.num_classes));
  const uint64_t stream = 0x68656164;  // "head": apart from the graph's parameter streams
  tbb::parallel_for(int64_t{0}, rows(), [&](int64_t r) {
    const uint64_t cls = static_cast<uint64_t>(row_begin_ + r);
    for (int64_t d = 0; d < o_.emb_dim; ++d) {
      const uint32_t word = ops::philox_word(o_.seed ^ (cls * 0x9E3779B97F4A7C15ull), stream, static_cast<uint64_t>(d));
      weights_[static_cast<size_t>(r * o_.emb_dim + d)] = static_cast<T>((2.0 * ops::uniform01(word) - 1.0) * bound);
    }
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
    const std::vector<int64_t> picked = sample_classes(o_.seed, step, row_begin_, row_end_, o_.sample_ratio, b.labels);
    cols.reserve(picked.size());
    for (int64_t c : picked) cols.push_back(c - row_begin_);
    sampled_ = cols;
  }
  const int64_t m = sampled ? static_cast<int64_t>(cols.size()) : rows();
  auto column_of = [&](int64_t label) -> int64_t {  // the label's column here, or -1
    if (label < row_begin_ || label >= row_end_) return -1;
    const int64_t local = label - row_begin_;
    if (!sampled) return local;
    const auto it = std::lower_bound(cols.begin(), cols.end(), local);
    return it != cols.end() && *it == local ? it - cols.begin() : -1;
  };

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
    const int64_t c = column_of(b.labels[iu]);
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
  std::vector<double> top(static_cast<size_t>(b.n * kTopK * 2), -std::numeric_limits<double>::infinity());
  tbb::parallel_for(int64_t{0}, b.n, [&](int64_t i) {
    Candidate best[kTopK];
    int found = 0;
    for (int64_t j = 0; j < m; ++j) {
      Candidate c{static_cast<double>(z[static_cast<size_t>(i * m + j)]), row_begin_ + (sampled ? cols[static_cast<size_t>(j)] : j)};
      if (found < kTopK) {
        best[found++] = c;
      } else if (better(c, best[kTopK - 1])) {
        best[kTopK - 1] = c;
      } else {
        continue;
      }
      for (int q = found - 1; q > 0 && better(best[q], best[q - 1]); --q) std::swap(best[q], best[q - 1]);
    }
    for (int q = 0; q < found; ++q) {
      top[static_cast<size_t>((i * kTopK + q) * 2)] = best[q].value;
      top[static_cast<size_t>((i * kTopK + q) * 2 + 1)] = static_cast<double>(best[q].cls);
    }
  });
  std::vector<double> all_top = top;
  if (sharded) {
    all_top.resize(top.size() * static_cast<size_t>(world_));
    comm_->allgather(std::span<const double>(top), std::span<double>(all_top));
  }
  const int sources = sharded ? world_ : 1;
  for (int64_t i = b.offset; i < b.offset + b.local; ++i) {
    std::vector<Candidate> merged;
    for (int q = 0; q < sources; ++q)
      for (int t = 0; t < kTopK; ++t) {
        const size_t at = ((static_cast<size_t>(q) * static_cast<size_t>(b.n) + static_cast<size_t>(i)) * kTopK + t) * 2;
        if (all_top[at] > -std::numeric_limits<double>::infinity())  // a slot a short shard left empty
          merged.push_back({all_top[at], static_cast<int64_t>(all_top[at + 1])});
      }
    std::sort(merged.begin(), merged.end(), better);
    const int64_t label = b.labels[static_cast<size_t>(i)];
    for (size_t t = 0; t < merged.size() && t < static_cast<size_t>(kTopK); ++t)
      if (merged[t].cls == label) {
        r.correct += t == 0 ? 1 : 0;
        r.correct_top5 += 1;
      }
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
