// Fuzzes the manifest.json reader (the pipeline, `check` and the trainer trust what it accepts) over
// arbitrary bytes. Only FormatError is an acceptable failure. A manifest that parses must serialize
// (the writer applies the same consistency checks) and read back to the same text: nothing is
// accepted that fastnn could not have written, and names round-trip byte for byte.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/check.h"
#include "core/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fastnn::Manifest m;
  try {
    m = fastnn::parse_manifest(bytes, "fuzz.json");
  } catch (const fastnn::FormatError&) {
    return 0;
  }
  const std::string once = fastnn::serialize_manifest(m);  // throws (a bug) if inconsistent
  const fastnn::Manifest again = fastnn::parse_manifest(once, "again.json");
  if (fastnn::serialize_manifest(again) != once) std::abort();
  if (again.class_names != m.class_names || again.inputs != m.inputs) std::abort();
  uint64_t total = 0;
  for (const auto& s : again.splits) {
    for (const auto& sh : s.shards) total += sh.records;  // sums were checked: no wrap
    if (s.num_records > total) std::abort();
  }
  return 0;
}
