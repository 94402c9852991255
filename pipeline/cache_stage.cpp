// cache(): records as stored, in memory (chunked arena) or in a TFRecord file.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "core/check.h"
#include "core/logging.h"
#include "pipeline/record_stream.h"

namespace fastnn::pipeline {
namespace {

// Chunks rather than one growing string: no 2× peak and no copying of gigabytes on growth.
constexpr size_t kChunkBytes = size_t{32} << 20;

class MemoryCache final : public RecordStream {
 public:
  MemoryCache(std::unique_ptr<RecordStream> up, ReadCounters* counters) : up_(std::move(up)), counters_(counters) {}

  void start_epoch(int64_t epoch) override {
    if (!complete_) {
      // A first epoch that was not read to the end (cannot happen within one iterator, which reads
      // epochs in order) would leave a partial cache: start over.
      chunks_.clear();
      entries_.clear();
      up_->start_epoch(epoch);
    }
    pos_ = 0;
  }

  bool next(std::string* out, SampleSource* src) override {
    if (complete_) {
      if (pos_ >= entries_.size()) return false;
      const Entry& e = entries_[pos_++];
      out->assign(chunks_[e.chunk].data() + e.offset, e.size);
      *src = e.src;
      counters_->cache_records.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (!up_->next(out, src)) {
      complete_ = true;
      pos_ = entries_.size();
      return false;
    }
    keep(*out, *src);
    return true;
  }

 private:
  struct Entry {
    uint32_t chunk;
    size_t offset;
    size_t size;
    SampleSource src;
  };

  void keep(const std::string& rec, const SampleSource& src) {
    if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < rec.size()) {
      chunks_.emplace_back();
      chunks_.back().reserve(std::max(kChunkBytes, rec.size()));
    }
    std::string& c = chunks_.back();
    entries_.push_back({static_cast<uint32_t>(chunks_.size() - 1), c.size(), rec.size(), src});
    c.append(rec);
  }

  std::unique_ptr<RecordStream> up_;
  ReadCounters* counters_;
  std::vector<std::string> chunks_;
  std::vector<Entry> entries_;
  bool complete_ = false;
  size_t pos_ = 0;
};

class FileCache final : public RecordStream {
 public:
  FileCache(std::unique_ptr<RecordStream> up, std::string path, std::string fingerprint, ReadCounters* counters)
      : up_(std::move(up)), path_(std::move(path)), fingerprint_(std::move(fingerprint)), counters_(counters) {
    std::error_code ec;
    complete_ = std::filesystem::exists(path_, ec);
    if (complete_) check_header();
  }

  ~FileCache() override {
    if (writer_) {  // abandoned during the first epoch: the partial file must not be mistaken for a cache
      try {
        writer_->close();
      } catch (...) {
      }
      writer_.reset();
      std::remove(tmp_path_.c_str());
    }
  }

  void start_epoch(int64_t epoch) override {
    if (complete_) {
      open_reader();
      return;
    }
    up_->start_epoch(epoch);
    tmp_path_ = str(path_, ".tmp-", ::getpid());
    writer_ = std::make_unique<TFRecordWriter>(tmp_path_);
    writer_->write(fingerprint_);
  }

  bool next(std::string* out, SampleSource* src) override {
    if (complete_) {
      std::string_view rec;
      if (!reader_->next(&rec)) return false;
      out->assign(rec.data(), rec.size());
      *src = {SampleSource::kCacheFile, reader_->record_index() - 1, reader_->record_offset()};
      counters_->cache_records.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (!up_->next(out, src)) {
      writer_->close();
      writer_.reset();
      std::error_code ec;
      std::filesystem::rename(tmp_path_, path_, ec);
      if (ec) throw IoError(str(path_, ": cannot rename the finished cache file into place: ", ec.message()));
      complete_ = true;
      return false;
    }
    writer_->write(*out);
    return true;
  }

 private:
  void open_reader() {
    reader_ = std::make_unique<TFRecordReader>(path_);
    std::string_view header;
    if (!reader_->next(&header)) throw FormatError(str(path_, ": empty cache file (no header record)"));
  }

  void check_header() {
    TFRecordReader reader(path_);
    std::string_view header;
    if (!reader.next(&header)) throw FormatError(str(path_, ": empty cache file (no header record)"));
    if (header != fingerprint_)
      throw ConfigError(str(path_, ": cache file was written for a different dataset or shard (header '",
                            header.substr(0, 200), "', expected '", fingerprint_.substr(0, 200),
                            "'); delete it or choose another cache path"));
  }

  std::unique_ptr<RecordStream> up_;
  std::string path_, tmp_path_, fingerprint_;
  ReadCounters* counters_;
  std::unique_ptr<TFRecordWriter> writer_;
  std::unique_ptr<TFRecordReader> reader_;
  bool complete_ = false;
};

}  // namespace

std::unique_ptr<RecordStream> make_cache_stage(std::unique_ptr<RecordStream> upstream, std::string path,
                                               std::string fingerprint, ReadCounters* counters) {
  if (path.empty()) return std::make_unique<MemoryCache>(std::move(upstream), counters);
  return std::make_unique<FileCache>(std::move(upstream), std::move(path), std::move(fingerprint), counters);
}

}  // namespace fastnn::pipeline
