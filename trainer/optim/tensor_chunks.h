// Multi-tensor launches: the GPU's gradient preparation, statistics and optimizer update each walk every
// parameter in one kernel launch instead of one launch per parameter (ResNet-50: 161 parameters, three
// launches each, were ~480 launches a step). The table below is planned once on the host, because the
// buffers never move while a runner lives, and copied to the device; each thread block takes one chunk.
//
// Chunks follow the parameters' order, each parameter split into pieces of at most `max_chunk`
// elements (the last piece of a parameter may be shorter; an empty parameter has none), so the work of
// a block is bounded and a large parameter is spread over many blocks. Everything here is host code and
// tested on the CPU (tensor_chunks_test); the kernels that read the table are in update_kernels.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fastnn::optim {

// One parameter's buffers, all with `count` elements (pointers may be null where not used).
struct ChunkSource {
  float* master = nullptr;      // f32 weights the optimizer updates
  float* grad32 = nullptr;      // f32 gradient the optimizer reads (prepared from `grad`)
  const void* grad = nullptr;   // the graph's gradient in the compute dtype (== grad32 for f32 graphs)
  void* value = nullptr;        // the graph's weights in the compute dtype, refreshed from master (null: f32)
  float* slot0 = nullptr;       // optimizer slots (update_rules.h kSlots)
  float* slot1 = nullptr;
  int64_t count = 0;
  float weight_decay = 0;       // added in preparation: g32 = grad * inv_scale + weight_decay * master
  bool decay = true;            // ParamRef::decay (adamweightdecay's decoupled decay)
  bool prepare = true;          // false: grad32 already holds the gradient the update reads
  bool grad_f32 = false;        // `grad` is f32 although the run computes in f16/bf16 (batch norm's parameters)
  size_t grad_bytes = 4, value_bytes = 4;  // element sizes of `grad` and `value`
};

// What one thread block handles: `count` elements starting at the pointers (already offset).
struct TensorChunk {
  float* master;
  float* grad32;
  const void* grad;
  void* value;
  float* slot0;
  float* slot1;
  int64_t count;
  float weight_decay;
  uint32_t flags;  // kChunkDecay | kChunkPrepare | kChunkGradF32
};
inline constexpr uint32_t kChunkDecay = 1;
inline constexpr uint32_t kChunkPrepare = 2;
inline constexpr uint32_t kChunkGradF32 = 4;

// Default chunk length: 64 Ki elements (256 KiB of f32), a few hundred blocks for ResNet-50.
inline constexpr int64_t kDefaultChunkElements = int64_t{1} << 16;

// Splits every parameter into chunks. Error for max_chunk < 1, a negative count or a non-empty parameter
// without master or grad32.
std::vector<TensorChunk> plan_chunks(std::span<const ChunkSource> params, int64_t max_chunk);

}  // namespace fastnn::optim
