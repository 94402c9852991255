#include "pipeline/batch.h"

#include <cstdlib>
#include <new>

#include "core/check.h"

namespace fastnn::pipeline {

size_t dtype_size(DType d) {
  switch (d) {
    case DType::kUint8: return 1;
    case DType::kFloat16: return 2;
    case DType::kFloat32: return 4;
  }
  return 0;
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kUint8: return "uint8";
    case DType::kFloat16: return "float16";
    case DType::kFloat32: return "float32";
  }
  return "?";
}

const char* layout_name(Layout l) { return l == Layout::kNHWC ? "NHWC" : "NCHW"; }

DType parse_dtype(std::string_view s) {
  if (s == "uint8") return DType::kUint8;
  if (s == "float" || s == "float32") return DType::kFloat32;
  if (s == "half" || s == "float16") return DType::kFloat16;
  throw ConfigError(str("unknown dtype '", s, "' (choose uint8, float32, float16)"));
}

Layout parse_layout(std::string_view s) {
  if (s == "NHWC" || s == "nhwc") return Layout::kNHWC;
  if (s == "NCHW" || s == "nchw") return Layout::kNCHW;
  throw ConfigError(str("unknown layout '", s, "' (choose NHWC, NCHW)"));
}

std::string BatchSpec::describe() const {
  return str(height, "x", width, "x", channels, " ", dtype_name(dtype), " ", layout_name(layout));
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
