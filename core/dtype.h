// The element types and activation layouts of every library of fastnn, said once at the bottom: the
// trainer's tensors (trainer/tensor.h), the pipeline's batches (pipeline/batch.h) and the checkpoints'
// named arrays (core/named_array.h) use these values. Each library spells them for its own users —
// "f32" in tensor messages, "float32" in pipeline flags, "F32" in safetensors files — through its own
// functions; what a library does not support (a batch of bf16, a safetensors F64) it refuses by name.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastnn {

enum class DType : uint8_t { kF32, kF64, kF16, kBF16, kI32, kI64, kU8 };
// kNone: not a 4-D activation, or not said. The CPU reference ops read kNone and kNCHW as NCHW.
enum class Layout : uint8_t { kNone, kNCHW, kNHWC };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "bf16", ...
bool is_floating(DType t);        // f32, f64, f16, bf16
const char* layout_name(Layout l);  // "none", "nchw", "nhwc"

}  // namespace fastnn
