// balance_classes(): every class present gives the same number of records per epoch (±1), the epoch
// keeping its length; record_stream.h states the rule.
#include <numeric>
#include <span>

#include "core/check.h"
#include "core/example.h"
#include "pipeline/record_stream.h"
#include "pipeline/rng.h"

namespace fastnn::pipeline {
namespace {

class ClassBalanceStage final : public RecordStream {
 public:
  ClassBalanceStage(std::unique_ptr<RecordStream> up, std::vector<uint64_t> class_counts, std::string label_key,
                    uint64_t seed, std::shared_ptr<const FileList> list)
      : up_(std::move(up)), counts_(std::move(class_counts)), label_key_(std::move(label_key)),
        parser_({label_key_}), seed_(seed), list_(std::move(list)) {
    for (size_t c = 0; c < counts_.size(); ++c)
      if (counts_[c] > 0) present_.push_back(static_cast<uint32_t>(c));
    total_ = std::accumulate(counts_.begin(), counts_.end(), uint64_t{0});
    FASTNN_CHECK(total_ > 0, "balance_classes: the class counts hold no record");
  }

  void start_epoch(int64_t epoch) override {
    up_->start_epoch(epoch);
    SampleRng rng(seed_, static_cast<uint64_t>(epoch), 0, RngStream::kClassBalance);
    // Each class's target is total / classes; the remainder's extra records go to classes in an order
    // drawn per epoch, so that no class is favoured across epochs.
    std::vector<uint32_t> order = present_;
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    const uint64_t k = present_.size();
    targets_.assign(counts_.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) targets_[order[i]] = total_ / k + (i < total_ % k ? 1 : 0);
    // Where in each class's sequence the evenly spread repeats (or omissions) start: a different
    // subset of the records is repeated or passed over every epoch.
    phase_.assign(counts_.size(), 0);
    for (uint32_t c : present_) phase_[c] = rng.below(counts_[c]);
    seen_.assign(counts_.size(), 0);
    copies_left_ = 0;
  }

  bool next(std::string* out, SampleSource* src) override {
    while (copies_left_ == 0) {
      if (!up_->next(&held_, &held_src_)) {
        check_epoch_complete();
        return false;
      }
      copies_left_ = copies_of(label_of(held_));
    }
    --copies_left_;
    if (copies_left_ == 0)
      out->swap(held_);  // the caller's old string comes back as the buffer for the next record
    else
      *out = held_;
    *src = held_src_;
    return true;
  }

 private:
  std::string where(const SampleSource& s) const { return describe_source(*list_, s); }

  uint32_t label_of(std::string_view record) const {
    FeatureView label;
    parser_.parse(record, std::span<FeatureView>(&label, 1));
    if (!label.present()) throw FormatError(str(where(held_src_), ": no ", label_key_, " to balance the classes by"));
    const int64_t c = label.single_int64(label_key_);
    if (c < 0 || static_cast<uint64_t>(c) >= counts_.size() || counts_[static_cast<size_t>(c)] == 0)
      throw FormatError(str(where(held_src_), ": label ", c, ", of which the shard histograms of ", list_->name,
                            " give this rank no record"));
    return static_cast<uint32_t>(c);
  }

  // Record j of its class (in stream order) is sent floor((j' + 1) t / n) - floor(j' t / n) times,
  // j' = (j + phase) mod n: exactly t copies over the class's n records, spread evenly.
  uint64_t copies_of(uint32_t c) {
    const uint64_t n = counts_[c];
    const uint64_t j = seen_[c]++;
    if (j >= n)
      throw FormatError(str(where(held_src_), ": more records of class ", c, " than the ", n, " that ", list_->name,
                            "'s shard histograms give this rank"));
    const unsigned __int128 jp = (j + phase_[c]) % n, t = targets_[c];
    return static_cast<uint64_t>((jp + 1) * t / n - jp * t / n);
  }

  void check_epoch_complete() const {
    for (uint32_t c : present_)
      if (seen_[c] != counts_[c])
        throw FormatError(str(list_->name, ": this rank's shards held ", seen_[c], " records of class ", c,
                              " this epoch, their histograms in the manifest say ", counts_[c]));
  }

  std::unique_ptr<RecordStream> up_;
  std::vector<uint64_t> counts_;  // per class, over this rank's records
  std::string label_key_;
  ExampleParser parser_;
  uint64_t seed_;
  std::shared_ptr<const FileList> list_;
  std::vector<uint32_t> present_;  // classes with records
  uint64_t total_ = 0;
  std::vector<uint64_t> targets_, phase_, seen_;
  std::string held_;
  SampleSource held_src_;
  uint64_t copies_left_ = 0;
};

}  // namespace

std::unique_ptr<RecordStream> make_class_balance_stage(std::unique_ptr<RecordStream> upstream,
                                                       std::vector<uint64_t> class_counts, std::string label_key,
                                                       uint64_t seed, std::shared_ptr<const FileList> list) {
  return std::make_unique<ClassBalanceStage>(std::move(upstream), std::move(class_counts), std::move(label_key),
                                             seed, std::move(list));
}

}  // namespace fastnn::pipeline
