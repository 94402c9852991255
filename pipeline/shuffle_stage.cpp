// shuffle(): tf.data's ShuffleDataset buffer algorithm with a counter-based RNG.
#include "core/check.h"
#include "pipeline/record_stream.h"
#include "pipeline/rng.h"

namespace fastnn::pipeline {
namespace {

class ShuffleStage final : public RecordStream {
 public:
  ShuffleStage(std::unique_ptr<RecordStream> up, size_t buffer_size, uint64_t seed, bool reshuffle)
      : up_(std::move(up)), capacity_(buffer_size), seed_(seed), reshuffle_(reshuffle),
        rng_(seed, 0, 0, RngStream::kShuffle) {
    FASTNN_CHECK(buffer_size >= 1, "shuffle buffer_size must be >= 1");
  }

  void start_epoch(int64_t epoch) override {
    up_->start_epoch(epoch);
    rng_ = SampleRng(seed_, reshuffle_ ? static_cast<uint64_t>(epoch) : 0, 0, RngStream::kShuffle);
    filled_ = 0;
    upstream_done_ = false;
  }

  bool next(std::string* out, SampleSource* src) override {
    while (!upstream_done_ && filled_ < capacity_) {
      if (filled_ == buf_.size()) buf_.emplace_back();  // grows to capacity once, then reused
      Item& it = buf_[filled_];
      if (up_->next(&it.bytes, &it.src))
        ++filled_;
      else
        upstream_done_ = true;
    }
    if (filled_ == 0) return false;
    size_t j = static_cast<size_t>(rng_.below(filled_));
    out->swap(buf_[j].bytes);  // the caller's old string (and its capacity) moves into the buffer
    *src = buf_[j].src;
    if (!upstream_done_ && up_->next(&buf_[j].bytes, &buf_[j].src)) return true;
    upstream_done_ = true;
    std::swap(buf_[j], buf_[filled_ - 1]);
    --filled_;
    return true;
  }

 private:
  struct Item {
    std::string bytes;
    SampleSource src;
  };
  std::unique_ptr<RecordStream> up_;
  size_t capacity_;
  uint64_t seed_;
  bool reshuffle_;
  SampleRng rng_;
  std::vector<Item> buf_;
  size_t filled_ = 0;
  bool upstream_done_ = false;
};

}  // namespace

std::unique_ptr<RecordStream> make_shuffle_stage(std::unique_ptr<RecordStream> upstream, size_t buffer_size,
                                                 uint64_t seed, bool reshuffle_each_iteration) {
  return std::make_unique<ShuffleStage>(std::move(upstream), buffer_size, seed, reshuffle_each_iteration);
}

}  // namespace fastnn::pipeline
