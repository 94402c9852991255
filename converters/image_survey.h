// What `fastnn check --report` shows besides the check itself (converters/check_report_page.h): image
// sizes, per-channel pixel statistics and sample images per class, gathered by the check's own pass
// over the records (shard_check.h), from the same parsed records and the same decodes.
//
// Sizes: every record whose image header (or raw geometry) was read, counted by height × width ×
// channels. Channel statistics: the records that were decoded — all of them with --decode, else the
// first `stats_records / shards` (rounded up) records of each shard (shards are globally shuffled, so
// that is a fair sample of a fastnn set; of an unshuffled foreign set it is the first records of each
// shard, which the page says). Mean and standard deviation (population) of the 8-bit values of each
// channel over every pixel of those images, grouped by the images' channel count. Samples: per class
// (labels below max_sample_classes) the samples_per_class records that come first in (split, shard,
// record) order, kept as thumbnails (longer side at most kThumbnailSide, area-averaged); which ones
// does not depend on the threads.
//
// Bounds (untrusted data): memory is at most max_sample_classes × samples_per_class thumbnails plus
// one counter per distinct image size (at most kMaxSizes; further sizes are counted as "other").
// Thread-safety: SampleTable is shared by the shard workers (one mutex); ImageSurvey is per shard and
// merged by the caller in shard order.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/image.h"

namespace fastnn::converters {

inline constexpr int kThumbnailSide = 64;
inline constexpr size_t kMaxSizes = 4096;

struct SurveyOptions {
  bool enabled = false;
  int64_t samples_per_class = 8;   // 0..64
  int64_t max_sample_classes = 100;
  uint64_t stats_records = 10000;  // records decoded for the channel statistics without --decode (0: none)
};

// What one record contributed (filled by the record check).
struct RecordFacts {
  int64_t height = 0, width = 0, channels = 0;  // 0: the image header was not read
  std::string_view encoded;                     // the image bytes inside the record ("" = unusable)
  std::string_view format;                      // "png", "jpeg" or "raw"
  bool measured = false;                        // decoded; the sums below hold its pixels
  std::array<uint64_t, 4> sum{}, sum_sq{};
};

// Sums of one decoded image's pixels (8-bit HWC, `channels` 1..4) into *facts.
void measure_pixels(const uint8_t* pixels, size_t num_pixels, int channels, RecordFacts* facts);

struct ChannelStats {
  int channels = 0;
  uint64_t images = 0, pixels = 0;  // pixels per channel
  std::array<double, 4> sum{}, sum_sq{};
  double mean(int c) const;
  double stddev(int c) const;  // population
};

struct ImageSurvey {
  std::map<std::tuple<int64_t, int64_t, int64_t>, uint64_t> sizes;  // (height, width, channels) → records
  uint64_t other_sizes = 0;  // records of sizes beyond kMaxSizes distinct ones
  std::map<int, ChannelStats> channel_stats;  // by channel count
  uint64_t decoded = 0;                       // records that went into channel_stats
  void add(const RecordFacts& f);
  void merge(const ImageSurvey& other);
};

struct SampleImage {
  int64_t label = 0;
  std::string split, shard;
  uint64_t record = 0;  // index in the shard
  Image thumbnail;
};

// Keeps, per label, the samples with the smallest (split, shard, record) keys.
class SampleTable {
 public:
  explicit SampleTable(const SurveyOptions& o) : per_class_(o.samples_per_class), max_classes_(o.max_sample_classes) {}
  using Key = std::tuple<size_t, size_t, uint64_t>;  // split index, shard index, record index
  // Whether a record with this label and key would be kept now (cheap; call before decoding).
  bool wants(int64_t label, const Key& key) const;
  // Decodes the record's image into a thumbnail and keeps it if it still belongs. A record that does
  // not decode is skipped (the check reports it).
  void offer(int64_t label, const Key& key, const RecordFacts& facts, const std::string& split, const std::string& shard);
  // By label, each in key order.
  std::map<int64_t, std::vector<SampleImage>> take();
  // What take() would give, with each sample's label and key (to travel between mpirun ranks), and
  // the way back in: keep() files a sample under the same rule as offer().
  struct Kept {
    int64_t label;
    Key key;
    SampleImage sample;
  };
  std::vector<Kept> take_keyed();
  void keep(int64_t label, const Key& key, SampleImage sample);

 private:
  mutable std::mutex mu_;
  int64_t per_class_, max_classes_;
  std::map<int64_t, std::map<Key, SampleImage>> by_label_;
};

}  // namespace fastnn::converters
