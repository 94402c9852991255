#include "trainer/head/head_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/check.h"

namespace fastnn::head {
namespace {

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw ConfigError(str("the classifier head's memory (", a, " x ", b, " bytes) overflows 64 bits"));
  return r;
}
int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw ConfigError("the classifier head's memory overflows 64 bits");
  return r;
}

int64_t sampled_rows_bound(int64_t rows, double ratio, int64_t global_batch) {
  if (ratio >= 1.0 || rows == 0) return rows;
  const double n = static_cast<double>(rows);
  const double negatives = std::ceil(ratio * n + 6.0 * std::sqrt(n * ratio * (1.0 - ratio)));
  if (negatives >= n) return rows;
  return std::min(rows, static_cast<int64_t>(negatives) + std::min(global_batch, rows));
}

}  // namespace

std::pair<int64_t, int64_t> class_range(int64_t num_classes, int world, int rank) {
  FASTNN_CHECK(num_classes >= 0 && world >= 1 && rank >= 0 && rank < world, "class_range(", num_classes, ", ",
               world, ", ", rank, ")");
  const int64_t base = num_classes / world, extra = num_classes % world;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

HeadMemory head_memory(int64_t num_classes, int64_t emb_dim, int world_size, int rank, int64_t global_batch,
                       double sample_ratio, size_t weight_bytes, int optimizer_slots, bool master_copy) {
  if (num_classes < 1) throw ConfigError(str("num_classes=", num_classes, " must be at least 1"));
  if (emb_dim < 1) throw ConfigError(str("--emb_dim=", emb_dim, " must be at least 1"));
  if (world_size < 1) throw ConfigError(str("world size ", world_size, " must be at least 1"));
  if (global_batch < 1) throw ConfigError(str("global batch ", global_batch, " must be at least 1"));
  if (!(sample_ratio > 0 && sample_ratio <= 1))
    throw ConfigError(str("--sample_ratio=", sample_ratio, " must be in (0, 1]"));
  if (weight_bytes != 2 && weight_bytes != 4)
    throw ConfigError(str("head weights of ", weight_bytes, " bytes: only 2 (f16) or 4 (f32)"));
  if (optimizer_slots < 0 || optimizer_slots > 8)
    throw ConfigError(str("optimizer_slots=", optimizer_slots, " must be in [0, 8]"));
  FASTNN_CHECK(rank >= 0 && rank < world_size, "rank ", rank, " of ", world_size);

  HeadMemory m;
  const auto [begin, end] = class_range(num_classes, world_size, rank);
  m.rows = end - begin;
  m.first_row = begin;
  m.num_classes = num_classes;
  m.emb_dim = emb_dim;
  m.global_batch = global_batch;
  m.world_size = world_size;
  m.rank = rank;
  m.sample_ratio = sample_ratio;
  m.weight_bytes = weight_bytes;
  m.optimizer_slots = optimizer_slots;
  m.master_copy = master_copy;
  m.sampled_rows = sampled_rows_bound(m.rows, sample_ratio, global_batch);

  const int64_t wb = static_cast<int64_t>(weight_bytes);
  const int64_t row_elems = checked_mul(m.rows, emb_dim);
  m.weights = checked_add(checked_mul(row_elems, wb), master_copy ? checked_mul(row_elems, 4) : 0);
  m.gradients = checked_mul(checked_mul(m.sampled_rows, emb_dim), wb);
  m.optimizer_state = checked_mul(checked_mul(row_elems, 4), optimizer_slots);
  m.sampled_weights = sample_ratio < 1 ? checked_mul(checked_mul(m.sampled_rows, emb_dim), wb) : 0;
  m.features = checked_mul(checked_mul(global_batch, emb_dim), 12);
  // Training's logits and their gradient, or evaluation's: every row scored for a rank's batch (no
  // sampling in evaluation), which is the larger below sample_ratio ~ 1/(2 * world) and is kept once grown.
  const int64_t rank_batch = (global_batch + world_size - 1) / world_size;
  m.logits = std::max(checked_mul(checked_mul(global_batch, m.sampled_rows), 8), checked_mul(checked_mul(rank_batch, m.rows), 4));
  m.total = checked_add(checked_add(checked_add(m.weights, m.gradients), checked_add(m.optimizer_state, m.features)),
                        checked_add(m.logits, m.sampled_weights));
  return m;
}

int64_t min_world_size(const HeadMemory& m, int64_t available_bytes) {
  const auto total_at = [&](int64_t w) {
    return head_memory(m.num_classes, m.emb_dim, static_cast<int>(w), 0, m.global_batch, m.sample_ratio,
                       m.weight_bytes, m.optimizer_slots, m.master_copy)
        .total;
  };
  // Rank 0's total does not grow with the world size, so the first fitting size is found by bisection.
  int64_t hi = std::min<int64_t>(m.num_classes, std::numeric_limits<int>::max());
  if (total_at(hi) > available_bytes) return 0;
  int64_t lo = 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (total_at(mid) <= available_bytes)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

std::string bytes_text(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return str(bytes, " B");
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  // Three significant digits; a value that rounds up to 1024 moves to the next unit.
  if (v >= 999.5 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, kUnits[u]);
  return buf;
}

namespace {

std::string parts_text(const HeadMemory& m) {
  return str("weights ", bytes_text(m.weights), m.master_copy ? " (with an f32 master copy)" : "", " + gradients ",
             bytes_text(m.gradients), " + optimizer state ", bytes_text(m.optimizer_state),
             m.sample_ratio < 1 ? str(" + sampled rows' copy ", bytes_text(m.sampled_weights)) : std::string(), " + features ",
             bytes_text(m.features), " + logits ", bytes_text(m.logits), " (batch ", m.global_batch, " x ",
             m.sampled_rows, " f32, and gradient)");
}

}  // namespace

std::string head_memory_text(const HeadMemory& m) {
  std::string used = m.sample_ratio < 1
                         ? str(", at most ", m.sampled_rows, " used per step at sample_ratio ", m.sample_ratio)
                         : std::string();
  return str("classifier head, rank ", m.rank, " of ", m.world_size, ": classes [", m.first_row, ", ",
             m.first_row + m.rows, ") (", m.rows, " rows x ", m.emb_dim, used, "): ", parts_text(m), " = ",
             bytes_text(m.total));
}

std::string head_memory_refusal(const HeadMemory& m, int64_t available_bytes, std::string_view where) {
  FASTNN_CHECK(m.total > available_bytes, "head_memory_refusal for a head that fits");
  std::string s = str("the classifier head does not fit: rank ", m.rank, " of ", m.world_size, " needs ",
                      bytes_text(m.total), " (", m.total, " bytes) but ", where, " has ", bytes_text(available_bytes),
                      " (", available_bytes, " bytes) available; ", parts_text(m), ". ");
  const int64_t w = min_world_size(m, available_bytes);
  if (w > m.world_size)
    s += str("At this global batch and sample_ratio it fits on ", w, " or more ranks (mpirun -np)");
  else if (w == 0)
    s += str("No number of ranks fits it at this global batch and sample_ratio");
  else
    s += str("It fits on ", w, " ranks");  // unreachable: rank 0 holds the most (checked above)
  s += m.weight_bytes == 4 ? "; a smaller --sample_ratio or global batch, or f16 head weights, also shrink it."
                           : "; a smaller --sample_ratio or global batch also shrinks it.";
  return s;
}

void check_device_logits(int64_t global_batch, int64_t columns, int world, double sample_ratio) {
  auto product = [&] {  // B x m, when it fits in 64 bits
    return columns <= std::numeric_limits<int64_t>::max() / global_batch ? str(" = ", global_batch * columns)
                                                                         : std::string();
  };
  FASTNN_CHECK(global_batch <= 0 || columns <= (kMaxDeviceLogits - 1) / global_batch,  // B x m < 2^31
               "classifier head on the GPU: this step's logits are ", global_batch, " samples x ", columns, " classes",
               product(), " f32 values, not below the ", kMaxDeviceLogits,
               " (2^31) that the device head's GEMMs take as one matrix (they are not split into column blocks); "
               "use fewer samples per step (the global batch: batch_size x ranks, here ", global_batch, " over ", world,
               world == 1 ? " rank" : " ranks", "), more ranks (each holds fewer classes), or a smaller --sample_ratio (",
               sample_ratio < 1 ? str("now ", sample_ratio) : std::string("now 1: PartialFC off"), ")");
}

}  // namespace fastnn::head
