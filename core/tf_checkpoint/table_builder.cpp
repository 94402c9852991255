// TensorFlow's table format: writer (the format is described in table.h).
#include <cstring>

#include "core/check.h"
#include "core/crc32c.h"
#include "core/tf_checkpoint/table.h"

namespace fastnn::tf_checkpoint {
namespace {

constexpr int kRestartInterval = 16;  // TensorFlow's and LevelDB's default for data blocks

void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void put_fixed32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}

class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : interval_(restart_interval) {}
  bool empty() const { return count_ == 0; }
  size_t size() const { return bytes_.size() + 4 * restarts_.size() + 4; }
  const std::string& last_key() const { return last_; }

  void add(const std::string& key, const std::string& value) {
    size_t shared = 0;
    if (count_ % interval_ == 0) {
      restarts_.push_back(static_cast<uint32_t>(bytes_.size()));
    } else {
      const size_t n = std::min(last_.size(), key.size());
      while (shared < n && last_[shared] == key[shared]) ++shared;
    }
    put_varint(&bytes_, shared);
    put_varint(&bytes_, key.size() - shared);
    put_varint(&bytes_, value.size());
    bytes_.append(key, shared);
    bytes_ += value;
    last_ = key;
    ++count_;
  }

  // Appends the block and its trailer (raw type, masked CRC-32C) to `file`; returns its handle.
  std::string finish_into(std::string* file) {
    if (restarts_.empty()) restarts_.push_back(0);  // an empty block, as TensorFlow writes one
    for (uint32_t r : restarts_) put_fixed32(&bytes_, r);
    put_fixed32(&bytes_, static_cast<uint32_t>(restarts_.size()));
    std::string handle;
    put_varint(&handle, file->size());
    put_varint(&handle, bytes_.size());
    bytes_.push_back('\0');  // no compression
    const uint32_t crc = crc32c(bytes_.data(), bytes_.size());
    *file += bytes_;
    put_fixed32(file, crc32c_mask(crc));
    bytes_.clear();
    restarts_.clear();
    count_ = 0;
    return handle;
  }

 private:
  int interval_;
  std::string bytes_, last_;
  std::vector<uint32_t> restarts_;
  int count_ = 0;
};

}  // namespace

std::string encode_table(const std::vector<std::pair<std::string, std::string>>& entries, size_t block_bytes) {
  std::string file;
  BlockBuilder data(kRestartInterval), index(1);
  for (size_t i = 0; i < entries.size(); ++i) {
    FASTNN_CHECK(i == 0 || entries[i - 1].first < entries[i].first, "encode_table: keys not sorted and unique at ",
                 i);
    data.add(entries[i].first, entries[i].second);
    if (data.size() >= block_bytes || i + 1 == entries.size()) {
      const std::string last = data.last_key();  // >= every key of the block, < the next block's first
      index.add(last, data.finish_into(&file));
    }
  }
  BlockBuilder meta(kRestartInterval);
  const std::string meta_handle = meta.finish_into(&file);
  const std::string index_handle = index.finish_into(&file);
  std::string footer = meta_handle + index_handle;
  footer.resize(kTableFooterBytes - 8, '\0');
  put_fixed32(&footer, static_cast<uint32_t>(kTableMagic & 0xffffffffu));
  put_fixed32(&footer, static_cast<uint32_t>(kTableMagic >> 32));
  return file + footer;
}

}  // namespace fastnn::tf_checkpoint
