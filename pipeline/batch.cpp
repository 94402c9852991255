#include "pipeline/batch.h"

#include <cstdlib>
#include <new>

#include "core/check.h"

namespace fastnn::pipeline {

const char* batch_dtype_name(DType d) {
  switch (d) {
    case DType::kU8: return "uint8";
    case DType::kF16: return "float16";
    case DType::kF32: return "float32";
    default: return dtype_name(d);  // not a batch's: core/dtype.h's name
  }
}

const char* batch_layout_name(Layout l) { return l == Layout::kNHWC ? "NHWC" : l == Layout::kNCHW ? "NCHW" : "none"; }

DType parse_batch_dtype(std::string_view s) {
  if (s == "uint8") return DType::kU8;
  if (s == "float" || s == "float32") return DType::kF32;
  if (s == "half" || s == "float16") return DType::kF16;
  throw ConfigError(str("unknown dtype '", s, "' (choose uint8, float32, float16)"));
}

Layout parse_batch_layout(std::string_view s) {
  if (s == "NHWC" || s == "nhwc") return Layout::kNHWC;
  if (s == "NCHW" || s == "nchw") return Layout::kNCHW;
  throw ConfigError(str("unknown layout '", s, "' (choose NHWC, NCHW)"));
}

std::string BatchSpec::describe() const {
  return str(height, "x", width, "x", channels, " ", batch_dtype_name(dtype), " ", batch_layout_name(layout));
}

void* HostBatchAllocator::allocate(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  allocations_.fetch_add(1);
  live_bytes_.fetch_add(bytes);
  return p;
}

void HostBatchAllocator::deallocate(void* p, size_t bytes) {
  if (p == nullptr) return;
  std::free(p);
  live_bytes_.fetch_sub(bytes);
}

std::shared_ptr<BatchAllocator> default_batch_allocator() { return std::make_shared<HostBatchAllocator>(); }

}  // namespace fastnn::pipeline
