#include "trainer/optim/tensor_chunks.h"

#include <algorithm>
#include <type_traits>

#include "core/check.h"

namespace fastnn::optim {
namespace {

template <typename P>
P* advance(P* p, int64_t elements, size_t bytes) {
  if (!p) return nullptr;
  using Byte = std::conditional_t<std::is_const_v<P>, const char, char>;
  return reinterpret_cast<P*>(reinterpret_cast<Byte*>(p) + static_cast<size_t>(elements) * bytes);
}

}  // namespace

std::vector<TensorChunk> plan_chunks(std::span<const ChunkSource> params, int64_t max_chunk) {
  FASTNN_CHECK(max_chunk >= 1, "plan_chunks: chunk length ", max_chunk, " < 1");
  std::vector<TensorChunk> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const ChunkSource& p = params[i];
    FASTNN_CHECK(p.count >= 0, "plan_chunks: parameter ", i, " has ", p.count, " elements");
    if (p.count == 0) continue;
    FASTNN_CHECK(p.master && p.grad32, "plan_chunks: parameter ", i, " without master weights or f32 gradient");
    FASTNN_CHECK(!p.prepare || p.grad, "plan_chunks: parameter ", i, " is prepared from a null gradient");
    const uint32_t flags =
        (p.decay ? kChunkDecay : 0u) | (p.prepare ? kChunkPrepare : 0u) | (p.grad_f32 ? kChunkGradF32 : 0u);
    for (int64_t at = 0; at < p.count; at += max_chunk) {
      out.push_back({.master = p.master + at,
                     .grad32 = p.grad32 + at,
                     .grad = advance(p.grad, at, p.grad_bytes),
                     .value = advance(p.value, at, p.value_bytes),
                     .slot0 = p.slot0 ? p.slot0 + at : nullptr,
                     .slot1 = p.slot1 ? p.slot1 + at : nullptr,
                     .count = std::min(max_chunk, p.count - at),
                     .weight_decay = p.weight_decay,
                     .flags = flags});
    }
  }
  return out;
}

}  // namespace fastnn::optim
