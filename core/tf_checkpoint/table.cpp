// TensorFlow's table format: reader (the format is described in table.h).
#include "core/tf_checkpoint/table.h"

#include <snappy.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/crc32c.h"

namespace fastnn::tf_checkpoint {
namespace {

constexpr size_t kTrailerBytes = 5;  // type byte + masked CRC-32C
constexpr uint8_t kRaw = 0, kSnappy = 1;
// Snappy's densest element, a 3-byte copy of 64 bytes, expands 21.3x; nothing valid expands more.
constexpr uint64_t kSnappyMaxExpansion = 22;

uint32_t fixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A cursor over `bytes` whose reads fail with the file name and the absolute offset (`base` + position;
// just `base` for the bytes of a decompressed block, which have no file offset).
class Cursor {
 public:
  Cursor(std::string_view bytes, uint64_t base, const std::string& file, bool file_positions = true)
      : b_(bytes), base_(base), file_(file), file_positions_(file_positions) {}
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  uint64_t at() const { return file_positions_ ? base_ + pos_ : base_; }

  uint64_t varint(int max_bytes, const char* what) {
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (pos_ >= b_.size()) fail(str(what, " runs past the end of its block"));
      const auto c = static_cast<uint8_t>(b_[pos_++]);
      v |= static_cast<uint64_t>(c & 0x7f) << (7 * i);
      if (!(c & 0x80)) {
        if (max_bytes == 5 && v > UINT32_MAX) fail(str(what, " does not fit 32 bits"));
        return v;
      }
    }
    fail(str(what, " is a varint longer than ", max_bytes, " bytes"));
  }
  std::string_view take(uint64_t n, const char* what) {
    if (n > left()) fail(str(what, " of ", n, " bytes runs past the end of its block (", left(), " left)"));
    const std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(str(file_, ": ", what, " at byte ", at()));
  }

 private:
  std::string_view b_;
  uint64_t base_;
  size_t pos_ = 0;
  const std::string& file_;
  bool file_positions_;
};

struct Handle {
  uint64_t offset = 0, size = 0;
};

Handle read_handle(Cursor& c, const char* what) {
  Handle h;
  h.offset = c.varint(10, what);
  h.size = c.varint(10, what);
  return h;
}

}  // namespace

bool Table::has_magic(std::string_view bytes) {
  if (bytes.size() < kTableFooterBytes) return false;
  const char* m = bytes.data() + bytes.size() - 8;
  return (uint64_t{fixed32(m + 4)} << 32 | fixed32(m)) == kTableMagic;
}

void Table::read_block(std::string_view bytes, uint64_t offset, uint64_t size, const TableLimits& limits,
                       std::vector<TableEntry>* out) {
  const uint64_t end = bytes.size() - kTableFooterBytes;
  if (offset > end || size > end - offset || kTrailerBytes > end - offset - size)
    throw FormatError(str(name_, ": block [", offset, ", +", size, "] and its trailer run past the footer at byte ", end));
  const char* p = bytes.data() + offset;
  const uint8_t type = static_cast<uint8_t>(p[size]);
  const uint32_t stored = crc32c_unmask(fixed32(p + size + 1));
  const uint32_t actual = crc32c(p, size + 1);
  if (stored != actual && limits.verify_checksums)
    throw FormatError(str(name_, ": block at byte ", offset, " (", size, " bytes): CRC-32C ", actual,
                          " does not match the stored ", stored));
  std::string_view block(p, size);
  const bool raw = type == kRaw;
  if (type == kSnappy) {
    size_t n = 0;
    if (!snappy::GetUncompressedLength(p, size, &n))
      throw FormatError(str(name_, ": Snappy block at byte ", offset, ": unreadable length"));
    if (n > size * kSnappyMaxExpansion + 64 || n > limits.max_uncompressed_block_bytes)
      throw FormatError(str(name_, ": Snappy block at byte ", offset, " of ", size, " bytes claims ", n,
                            " bytes uncompressed, more than it can hold or the limit of ",
                            limits.max_uncompressed_block_bytes));
    auto buf = std::make_unique<char[]>(n);
    if (!snappy::RawUncompress(p, size, buf.get()))
      throw FormatError(str(name_, ": Snappy block at byte ", offset, ": corrupt compressed data"));
    block = std::string_view(buf.get(), n);
    decompressed_.push_back(std::move(buf));
  } else if (type != kRaw) {
    throw FormatError(str(name_, ": block at byte ", offset, ": unknown compression type ", int{type}));
  }
  // For messages: a raw block's positions are file offsets; a Snappy block's are reported at the block.
  auto where = [&](size_t pos) { return raw ? offset + pos : offset; };
  if (block.size() < 4) throw FormatError(str(name_, ": block at byte ", offset, " is ", block.size(), " bytes, too short"));
  const uint64_t restarts = fixed32(block.data() + block.size() - 4);
  if (restarts > (block.size() - 4) / 4)
    throw FormatError(str(name_, ": block at byte ", offset, ": ", restarts, " restart points do not fit its ",
                          block.size(), " bytes"));
  const size_t entries_end = block.size() - 4 - 4 * restarts;
  const std::string_view entries = block.substr(0, entries_end);
  Cursor e(entries, offset, name_, raw);
  std::string key;
  size_t next_restart = 0;
  while (e.left() > 0) {
    const size_t start = e.pos();
    const bool at_restart = next_restart < restarts && fixed32(block.data() + entries_end + 4 * next_restart) == start;
    if (out->size() >= limits.max_entries)
      throw FormatError(str(name_, ": more than ", limits.max_entries, " entries at byte ", where(start)));
    const uint64_t shared = e.varint(5, "shared key length");
    const uint64_t unshared = e.varint(5, "key length");
    const uint64_t value_len = e.varint(5, "value length");
    if (next_restart == 0 && !at_restart)
      throw FormatError(str(name_, ": entry at byte ", where(start), " comes before the block's first restart point"));
    if (at_restart ? shared != 0 : shared > key.size())
      throw FormatError(str(name_, ": entry at byte ", where(start), " shares ", shared, " bytes with a ", key.size(),
                            "-byte previous key", at_restart ? " at a restart point" : ""));
    if (at_restart) ++next_restart;
    key.resize(static_cast<size_t>(shared));
    key.append(e.take(unshared, "key"));
    const size_t value_pos = e.pos();
    const std::string_view value = e.take(value_len, "value");
    out->push_back({key, value, where(value_pos)});
  }
  // An empty block (LevelDB's and TensorFlow's builders write one restart point at 0) has no entries.
  const bool empty_block = entries.empty() && restarts == 1 && fixed32(block.data() + entries_end) == 0;
  if (next_restart != restarts && !empty_block)
    throw FormatError(str(name_, ": block at byte ", offset, ": restart point ", next_restart,
                          " is not the start of an entry"));
}

Table Table::parse(std::string_view bytes, std::string name, const TableLimits& limits) {
  Table t;
  t.name_ = std::move(name);
  if (bytes.size() < kTableFooterBytes)
    throw FormatError(str(t.name_, ": ", bytes.size(), " bytes, too short for a table (a ", kTableFooterBytes,
                          "-byte footer at least)"));
  if (!has_magic(bytes))
    throw FormatError(str(t.name_, ": not a TensorFlow table (no magic number in the last 8 bytes, byte ",
                          bytes.size() - 8, ")"));
  const uint64_t footer_at = bytes.size() - kTableFooterBytes;
  Cursor f(bytes.substr(footer_at, kTableFooterBytes - 8), footer_at, t.name_);
  read_handle(f, "metaindex handle");
  const Handle index = read_handle(f, "index handle");

  std::vector<TableEntry> index_entries;
  t.read_block(bytes, index.offset, index.size, limits, &index_entries);
  for (size_t i = 0; i < index_entries.size(); ++i) {
    const TableEntry& ie = index_entries[i];
    Cursor h(ie.value, ie.offset, t.name_);
    const Handle block = read_handle(h, "data block handle");
    if (h.left() != 0) h.fail("index entry holds bytes after its block handle");
    const size_t first = t.entries_.size();
    t.read_block(bytes, block.offset, block.size, limits, &t.entries_);
    if (t.entries_.size() > first && t.entries_.back().key > ie.key)
      throw FormatError(str(t.name_, ": index entry ", i, " (byte ", ie.offset, ") sorts before its block's last key"));
  }
  for (size_t i = 1; i < t.entries_.size(); ++i)
    if (!(t.entries_[i - 1].key < t.entries_[i].key))
      throw FormatError(str(t.name_, ": keys out of order or repeated at the entry at byte ", t.entries_[i].offset));
  return t;
}

const TableEntry* Table::find(std::string_view key) const {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                                   [](const TableEntry& e, std::string_view k) { return e.key < k; });
  return it != entries_.end() && it->key == key ? &*it : nullptr;
}

}  // namespace fastnn::tf_checkpoint
