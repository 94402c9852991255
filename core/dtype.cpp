#include "core/dtype.h"

#include "core/check.h"

namespace fastnn {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  throw Error(str("bad dtype ", static_cast<int>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
  }
  return "?";
}

bool is_floating(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kNone: return "none";
    case Layout::kNCHW: return "nchw";
    case Layout::kNHWC: return "nhwc";
  }
  return "?";
}

}  // namespace fastnn
