// Fuzzes the TensorFlow checkpoint readers (core/tf_checkpoint/: the table format, V2 bundles, V1 slice
// tables; files users bring to fine-tune from) over arbitrary bytes. Only FormatError is an acceptable
// failure. Input: a mode byte, then length-prefixed files (u32 little-endian length, bytes; the last
// file takes what is left when its length runs past the end):
//   mode % 3 == 0   one table: every entry's key and value read
//   mode % 3 == 1   a V2 checkpoint: the index, then its data files in shard order
//   mode % 3 == 2   a V1 checkpoint: its files
//   (mode / 3) odd  checksums not verified (TableLimits::verify_checksums), so that mutations reach the
//                   blocks, entries and tensors behind them
// A checkpoint that opens must be fully usable: every tensor either read whole (its bytes the shape's
// element count times the dtype's size) or refused with a FormatError.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tf_checkpoint/bundle_reader.h"
#include "core/tf_checkpoint/slices_reader.h"
#include "core/tf_checkpoint/tf_dtype.h"

namespace {

std::vector<std::string_view> split(std::string_view in) {
  std::vector<std::string_view> files;
  while (!in.empty() && files.size() < 8) {
    uint32_t n = 0;
    std::memcpy(&n, in.data(), std::min<size_t>(4, in.size()));
    in.remove_prefix(std::min<size_t>(4, in.size()));
    const size_t take = std::min<size_t>(n, in.size());
    files.push_back(in.substr(0, take));
    in.remove_prefix(take);
  }
  return files;
}

void use(const fastnn::tf_checkpoint::TfTensorSource& s) {
  for (const auto& t : s.tensors()) {
    if (s.find(t.name) != &t) std::abort();
    try {
      const fastnn::checkpoint::Array a = s.read(t.name);
      if (a.shape != t.shape || a.bytes.size() != a.view().num_elements() * fastnn::dtype_size(a.dtype)) std::abort();
      if (fastnn::tf_checkpoint::tf_to_array_dtype(t.dtype) != a.dtype) std::abort();
    } catch (const fastnn::FormatError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fastnn::tf_checkpoint;
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  TableLimits limits;
  limits.max_uncompressed_block_bytes = 1 << 22;
  limits.max_entries = 1 << 16;
  limits.verify_checksums = (data[0] / 3) % 2 == 0;  // odd modes reach past the CRCs to what they guard
  try {
    switch (data[0] % 3) {
      case 0: {
        const Table t = Table::parse(bytes, "fuzz.table", limits);
        size_t total = 0;
        for (const TableEntry& e : t.entries()) {
          total += e.key.size() + e.value.size();
          if (t.find(e.key) != &e) std::abort();
        }
        if (total == SIZE_MAX) std::abort();
        break;
      }
      case 1: {
        std::vector<std::string_view> files = split(bytes);
        if (files.empty()) break;
        const std::string_view index = files.front();
        files.erase(files.begin());
        use(*BundleReader::parse(index, files, "fuzz", limits));
        break;
      }
      default: {
        std::vector<std::pair<std::string, std::string_view>> files;
        for (std::string_view f : split(bytes)) files.push_back({"fuzz-" + std::to_string(files.size()), f});
        if (!files.empty()) use(*SlicesReader::parse(files, limits));
      }
    }
  } catch (const fastnn::FormatError&) {
  }
  return 0;
}
