// tf.data's InterleaveDataset order over TFRecord files, plus the by-record shard filter.
#include <optional>

#include "core/check.h"
#include "core/logging.h"
#include "pipeline/record_stream.h"

namespace fastnn::pipeline {
namespace {

class InterleaveReader final : public RecordStream {
 public:
  InterleaveReader(const FileList& list, std::vector<uint32_t> files, const ReaderConfig& config,
                   ReadCounters* counters)
      : list_(list), files_(std::move(files)), config_(config), counters_(counters) {
    FASTNN_CHECK(config_.cycle_length >= 1 && config_.block_length >= 1, "interleave(", config_.cycle_length,
                 ", ", config_.block_length, "): both must be >= 1");
    slots_.resize(static_cast<size_t>(config_.cycle_length));
  }

  void start_epoch(int64_t) override {
    for (auto& s : slots_) s.reset();
    next_file_ = 0;
    cursor_ = 0;
    taken_in_block_ = 0;
  }

  bool next(std::string* out, SampleSource* src) override {
    for (;;) {
      Slot& slot = slots_[cursor_];
      if (!slot.reader) {
        if (next_file_ < files_.size()) {
          open(&slot, files_[next_file_++]);
        } else if (all_empty()) {
          return false;
        } else {
          advance();
          continue;
        }
      }
      std::string_view rec;
      if (read_one(&slot, &rec)) {
        verify_count(slot, ++slot.records, false);
        out->assign(rec.data(), rec.size());
        *src = {slot.file, slot.reader->record_index(), slot.reader->record_offset()};
        counters_->records_read.fetch_add(1, std::memory_order_relaxed);
        if (++taken_in_block_ >= config_.block_length) advance();
        return true;
      }
      if (!slot.corrupt) verify_count(slot, slot.records, true);
      slot.reader.reset();  // exhausted: its place takes the next file when the cycle comes round
      advance();
    }
  }

 private:
  struct Slot {
    std::unique_ptr<TFRecordReader> reader;
    uint32_t file = 0;
    uint64_t bytes_seen = 0;
    uint64_t records = 0;   // read from this file so far
    bool corrupt = false;   // the rest was skipped (skip_corrupt): its count cannot be checked
    void reset() {
      reader.reset();
      records = 0;
      corrupt = false;
      bytes_seen = 0;
    }
  };

  void open(Slot* slot, uint32_t file) {
    const std::string& path = list_.files[file].path;
    TFRecordReaderOptions opt;
    opt.compression = list_.compression_known ? list_.compression : detect_compression(path);
    opt.verify_data_crc = config_.verify_data_crc;
    slot->reader = std::make_unique<TFRecordReader>(path, opt);
    slot->file = file;
    slot->bytes_seen = 0;
    slot->records = 0;
    slot->corrupt = false;
    counters_->files_opened.fetch_add(1, std::memory_order_relaxed);
  }

  bool read_one(Slot* slot, std::string_view* rec) {
    bool ok;
    try {
      ok = slot->reader->next(rec);
    } catch (const FormatError& e) {
      if (!config_.skip_corrupt) throw;
      counters_->corrupt_skipped.fetch_add(1, std::memory_order_relaxed);
      log_warn("skipping the rest of ", slot->reader->name(), " after a corrupt record: ", e.what());
      slot->corrupt = true;
      ok = false;
    }
    uint64_t now = slot->reader->source_bytes_read();
    counters_->bytes_read.fetch_add(now - slot->bytes_seen, std::memory_order_relaxed);
    slot->bytes_seen = now;
    return ok;
  }

  // The record count the file list promised (the manifest's, or a caller's) against what the file
  // holds: more records fail at the first extra one, fewer at the end of the file. Step counts are
  // computed from the promised counts, so a wrong one must not pass silently.
  void verify_count(const Slot& slot, uint64_t read, bool at_end) const {
    const int64_t expected = list_.files[slot.file].records;
    if (expected < 0) return;
    if (read > static_cast<uint64_t>(expected) || (at_end && read != static_cast<uint64_t>(expected)))
      throw FormatError(str(list_.files[slot.file].path, ": ", at_end ? "holds " : "holds more than ", at_end ? read : read - 1,
                            " records, but ", list_.name, " says ", expected,
                            " (the manifest does not match the shard; reconvert, or check it with fastnn check)"));
  }

  bool all_empty() const {
    for (const auto& s : slots_)
      if (s.reader) return false;
    return true;
  }

  void advance() {
    cursor_ = (cursor_ + 1) % slots_.size();
    taken_in_block_ = 0;
  }

  const FileList& list_;
  std::vector<uint32_t> files_;
  ReaderConfig config_;
  ReadCounters* counters_;
  std::vector<Slot> slots_;
  size_t next_file_ = 0;
  size_t cursor_ = 0;
  int taken_in_block_ = 0;
};

class RecordShardFilter final : public RecordStream {
 public:
  RecordShardFilter(std::unique_ptr<RecordStream> up, int rank, int world, uint64_t limit)
      : up_(std::move(up)), rank_(static_cast<uint64_t>(rank)), world_(static_cast<uint64_t>(world)),
        limit_(limit) {}

  void start_epoch(int64_t epoch) override {
    up_->start_epoch(epoch);
    pos_ = 0;
  }

  bool next(std::string* out, SampleSource* src) override {
    while (pos_ < limit_) {
      if (!up_->next(out, src)) return false;
      uint64_t p = pos_++;
      if (p % world_ == rank_) return true;
    }
    return false;  // the tail no rank gets
  }

 private:
  std::unique_ptr<RecordStream> up_;
  uint64_t rank_, world_, limit_;
  uint64_t pos_ = 0;
};

}  // namespace

std::unique_ptr<RecordStream> make_interleave_reader(const FileList& list, std::vector<uint32_t> files,
                                                     const ReaderConfig& config, ReadCounters* counters) {
  return std::make_unique<InterleaveReader>(list, std::move(files), config, counters);
}

std::unique_ptr<RecordStream> make_record_shard_filter(std::unique_ptr<RecordStream> upstream, int rank,
                                                       int world, uint64_t limit) {
  return std::make_unique<RecordShardFilter>(std::move(upstream), rank, world, limit);
}

}  // namespace fastnn::pipeline
