#include "trainer/inference/head_logits.h"

#include <cmath>

#include "core/check.h"
#include "trainer/checkpoint/row_shards.h"
#include "trainer/head/head_config.h"
#include "trainer/ops/cpu_kernel.h"

namespace fastnn::inference {
namespace {

// 1 / |v| over `n` floats in double; 0 for a zero vector (its cosine is taken as 0, not NaN).
float inverse_norm(const float* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(v[i]) * v[i];
  return s > 0 ? static_cast<float>(1.0 / std::sqrt(s)) : 0.0f;
}

}  // namespace

HeadLogits::HeadLogits(std::vector<float> rows, int64_t classes, int64_t emb_dim, const head::MarginSpec& spec)
    : rows_(std::move(rows)), classes_(classes), emb_dim_(emb_dim), spec_(spec) {
  FASTNN_CHECK(classes >= 1 && emb_dim >= 1 && static_cast<int64_t>(rows_.size()) == classes * emb_dim,
               "HeadLogits: ", rows_.size(), " floats for ", classes, " x ", emb_dim);
  if (!spec_.normalized) return;
  inv_norm_.resize(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c) inv_norm_[static_cast<size_t>(c)] = inverse_norm(&rows_[static_cast<size_t>(c * emb_dim)], emb_dim);
}

std::vector<float> HeadLogits::effective_rows() const {
  std::vector<float> r = rows_;
  if (!spec_.normalized) return r;
  for (int64_t c = 0; c < classes_; ++c)
    for (int64_t k = 0; k < emb_dim_; ++k) r[static_cast<size_t>(c * emb_dim_ + k)] *= inv_norm_[static_cast<size_t>(c)];
  return r;
}

void HeadLogits::compute(const float* x, int64_t n, float* z) const {
  // z = x . W^T, then per row (1/|x|) and per column (1/|w_c|) for the cosine, and the head's map.
  ops::cpu::gemm(false, true, n, classes_, emb_dim_, 1.0f, x, emb_dim_, rows_.data(), emb_dim_, 0.0f, z, classes_);
  for (int64_t i = 0; i < n; ++i) {
    float* zi = z + i * classes_;
    const float inv_x = spec_.normalized ? inverse_norm(x + i * emb_dim_, emb_dim_) : 1.0f;
    for (int64_t c = 0; c < classes_; ++c) {
      const double v = spec_.normalized ? static_cast<double>(zi[c]) * inv_x * inv_norm_[static_cast<size_t>(c)] : zi[c];
      zi[c] = static_cast<float>(head::non_target_logit(v, spec_).logit);
    }
  }
}

// An embedding model's class rows (docs/LARGE_SCALE.md): "Head/weights" [classes, emb_dim], a
// replicated head's array in the weights file, or a sharded head's rows re-assembled from its files.
std::unique_ptr<HeadLogits> load_head_logits(const checkpoint::LoadedCheckpoint& l, const JobConfig& c, int classes) {
  constexpr const char* kRows = "Head/weights";
  std::vector<float> rows;
  std::vector<int64_t> shape;
  for (const checkpoint::ArrayView& a : l.weights.arrays())
    if (a.name == kRows) {
      rows = checkpoint::to_f32(a);
      shape = a.shape;
    }
  if (rows.empty()) {
    checkpoint::RowShardReader reader(l);
    const checkpoint::RowShardedArrayLayout* w = reader.find(kRows);
    if (w == nullptr) throw FormatError(str(l.prefix, ": an embedding model (loss_type ", c.loss_type(), ") without ", kRows));
    shape = w->global_shape;
    rows = reader.read_all(kRows);
  }
  if (shape.size() != 2 || shape[0] != classes || shape[1] != c.emb_dim())
    throw FormatError(str(l.prefix, ": ", kRows, " is ", checkpoint::shape_string(shape), ", the run had ", classes,
                          " classes of emb_dim ", c.emb_dim()));
  return std::make_unique<HeadLogits>(std::move(rows), shape[0], shape[1], head::head_options(c, classes, 0).margin);
}

}  // namespace fastnn::inference
