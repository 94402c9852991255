// Fuzzes the converters' parsers of source bytes users bring: one base64-TSV line, an IDX header and
// body (MNIST), CIFAR binary records. The first input byte picks the parser (one target keeps the
// CI time small; libFuzzer learns the selector quickly). Only FormatError is an acceptable failure;
// what parses must be self-consistent (sizes match the header, labels within their bounds).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "converters/base64_tsv.h"
#include "converters/cifar.h"
#include "converters/idx.h"
#include "core/check.h"

using namespace fastnn;
using namespace fastnn::converters;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t selector = data[0], flags = data[1];
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    switch (selector % 3) {
      case 0: {  // base64-TSV line
        ImageLimits limits;
        limits.max_pixels = 1 << 20;
        std::string scratch;
        const int64_t max_label = flags & 2 ? 9 : (int64_t{1} << 24) - 1;
        const TsvLine t = parse_tsv_line(body, flags & 1, max_label, limits, &scratch);
        if (t.status == TsvLine::kGood) {
          if (t.label < 0 || t.label > max_label) std::abort();
          if (t.b64_pos + t.b64_length > body.size() || t.image_bytes > scratch.size()) std::abort();
        } else if (t.status == TsvLine::kBad && t.reason.empty()) {
          std::abort();
        }
        break;
      }
      case 1: {  // IDX (MNIST): 1-dim labels or 3-dim images
        IdxLimits lim;
        lim.max_items = 1 << 16;
        lim.max_item_bytes = 1 << 12;
        lim.max_total_bytes = 1 << 20;
        const int dims = flags & 1 ? 3 : 1;
        const IdxArray a = parse_idx(body, "fuzz.idx", dims, lim);
        if (a.dims.size() != static_cast<size_t>(dims)) std::abort();
        if (a.data.size() != a.count() * a.item_bytes() || a.data.size() > lim.max_total_bytes) std::abort();
        break;
      }
      default: {  // CIFAR binary records
        const bool c100 = flags & 1;
        const uint64_t n = cifar_record_count(body.size(), c100, "fuzz.bin");
        const uint64_t rb = body.size() / n;
        for (uint64_t i = 0; i < n; ++i) {
          int fine = 0, coarse = 0;
          const std::string why =
              cifar_record_labels(reinterpret_cast<const uint8_t*>(body.data()) + i * rb, c100, &fine, &coarse);
          if (why.empty() && (fine < 0 || fine >= (c100 ? 100 : 10) || coarse >= 20)) std::abort();
        }
        break;
      }
    }
  } catch (const FormatError&) {
  }
  return 0;
}
