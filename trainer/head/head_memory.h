// The model-parallel head's class split and its memory per rank, known before anything is allocated.
//
// Split: K classes over W ranks as evenly as possible — the first K % W ranks hold K / W + 1 rows, the
// others K / W — in rank order, so rank r holds the contiguous range class_range(K, W, r) and rank 0 holds
// the most. Checkpoints record these ranges; any other W re-splits them by copying rows.
//
// What head_memory counts, per rank (bytes):
//   weights          rows × D × weight_bytes, plus rows × D × 4 for an f32 master copy (master_copy)
//   gradients        sampled_rows × D × weight_bytes: only rows used this step get a gradient (all rows
//                    when sample_ratio = 1)
//   optimizer_state  rows × D × 4 × optimizer_slots (f32 slots for every row: momentum 1, adam/rmsprop 2)
//   sampled_weights  sampled_rows × D × weight_bytes when sample_ratio < 1: PartialFC's compact copy of
//                    the used rows (PLSC's sub_weight); 0 at sample_ratio 1
//   features         B × D × 4 × 3: the all-gathered f32 features, their unit-length copy, and the global
//                    batch's feature gradient before the reduce-scatter
//   logits           B × sampled_rows × 4 × 2: the f32 logits and their gradient (an implementation that
//                    overwrites the logits with their gradient needs half: the estimate errs on the safe side),
//                    or evaluation's ceil(B / W) × rows × 4 when larger: evaluation scores every row of a
//                    rank's batch, PartialFC or not, and the heads keep the grown buffer (an H200 on 2026-11-27
//                    measured 12.2 GiB at 1.25 M × 512, batch 1024, ratio 0.1 on one GPU: the training
//                    step alone needs about 6 GiB)
//   total            the sum
// with B the global batch (the head sees every rank's samples) and sampled_rows an upper bound on the
// rows a step uses: every row when sample_ratio = 1, else
//   min(rows, ceil(ratio·rows + 6·sqrt(rows·ratio·(1 − ratio))) + min(B, rows))
// (the expected negatives plus six standard deviations of the binomial draw — exceeded with probability
// below 1e-9 per step — plus every possible positive). Not counted: per-row max/sum/label vectors
// (O(B)), the communicators' staging buffers, the backbone, and a lazy PartialFC update's gathered rows
// and slots (sampled_rows × D × 4 × (1 + slots), allocated after the step's logits are freed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace fastnn::head {

// [begin, end) of the classes rank `rank` of `world` holds. Requires K >= 0, world >= 1,
// 0 <= rank < world. A rank holds no rows when K < world.
std::pair<int64_t, int64_t> class_range(int64_t num_classes, int world, int rank);

struct HeadMemory {
  int64_t rows = 0;  // rows this rank holds
  int64_t weights = 0, gradients = 0, optimizer_state = 0, logits = 0, total = 0;
  int64_t sampled_weights = 0, features = 0;
  int64_t sampled_rows = 0;  // the bound above
  // The inputs, echoed for the messages.
  int64_t first_row = 0, num_classes = 0, emb_dim = 0, global_batch = 0;
  int world_size = 1, rank = 0;
  double sample_ratio = 1.0;
  size_t weight_bytes = 4;
  int optimizer_slots = 0;
  bool master_copy = false;
};

// Throws ConfigError for values no head can have (num_classes, emb_dim, world_size, global_batch < 1;
// sample_ratio outside (0, 1]; weight_bytes not 2 or 4; optimizer_slots outside [0, 8]) or a total
// that overflows 64 bits; rank outside [0, world_size) is a programming error (Error).
HeadMemory head_memory(int64_t num_classes, int64_t emb_dim, int world_size, int rank, int64_t global_batch,
                       double sample_ratio, size_t weight_bytes, int optimizer_slots, bool master_copy);

// The smallest world size at which rank 0 (the largest share) needs at most `available_bytes`, with the
// other inputs of `m`; 0 when no world size up to min(K, 2^31 − 1) fits (the B-dependent parts alone
// are too big).
int64_t min_world_size(const HeadMemory& m, int64_t available_bytes);

// "1.50 GiB", "12.0 MiB", "512 B": binary units, three significant digits.
std::string bytes_text(int64_t bytes);

// The start-up line, e.g.
// "classifier head, rank 0 of 2: classes [0, 500000) (500000 rows x 128, 50500 used per step at
//  sample_ratio 0.1): weights 244 MiB + gradients 24.7 MiB + optimizer state 244 MiB + features 256 KiB
//  + logits 51.9 MiB (batch 256 x 50500 f32, and gradient) = 565 MiB"
std::string head_memory_text(const HeadMemory& m);

// The refusal when m.total > available_bytes: what is needed, what there is (on `where`, e.g.
// "GPU 0" or "host memory"), the parts, and what would fit (min_world_size, a smaller sample_ratio or
// global batch, 2-byte weights). Requires m.total > available_bytes.
std::string head_memory_refusal(const HeadMemory& m, int64_t available_bytes, std::string_view where);

// The device head (classifier_head_cuda.h) holds a step's logits as one [B, m] f32 matrix (B the global
// batch, m its columns: this rank's rows, or PartialFC's sampled rows) that one cuBLAS GEMM writes and two
// read, without splitting it into column blocks: B × m must stay below kMaxDeviceLogits (2^31). Throws
// Error naming B, m, their product, the limit and what to change (fewer samples per step, more ranks,
// a smaller sample_ratio) otherwise; `world` and `sample_ratio` are the head's, for the message.
inline constexpr int64_t kMaxDeviceLogits = int64_t{1} << 31;
void check_device_logits(int64_t global_batch, int64_t columns, int world, double sample_ratio);

}  // namespace fastnn::head
