// Fuzzes the safetensors parser (checkpoints, fine-tuning sources: files users bring) over arbitrary
// bytes. Only FormatError is an acceptable failure. A file that parses must be fully usable: every
// array's bytes readable and convertible, and re-encoding it with our writer must give a file that
// parses to the same arrays and metadata (the parser accepts nothing the writer cannot reproduce).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/safetensors.h"

namespace {

bool same(const fastnn::checkpoint::ArrayView& a, const fastnn::checkpoint::ArrayView& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.bytes.size() == b.bytes.size() &&
         (a.bytes.empty() || std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fastnn::checkpoint;
  using fastnn::DType;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 16;
  try {
    SafetensorsFile f = SafetensorsFile::parse(bytes, "fuzz.safetensors", limits);
    volatile float sink = 0;
    for (const ArrayView& a : f.arrays()) {
      if (a.bytes.size() != a.num_elements() * dtype_size(a.dtype)) std::abort();
      if (a.dtype == DType::kF32 || a.dtype == DType::kF16 || a.dtype == DType::kBF16) {
        std::vector<float> v = to_f32(a);
        for (float x : v) sink = sink + x;
      }
      if (f.find(a.name) != &a) std::abort();
    }
    const std::string again = encode_safetensors(f.arrays(), f.metadata());
    SafetensorsFile g = SafetensorsFile::parse(again, "again.safetensors", limits);
    if (g.arrays().size() != f.arrays().size() || g.metadata() != f.metadata()) std::abort();
    for (size_t i = 0; i < f.arrays().size(); ++i)
      if (!same(f.arrays()[i], g.arrays()[i])) std::abort();
  } catch (const fastnn::FormatError&) {
  }
  return 0;
}
