// Shared by the two `fastnn check` paths (shard_check.cpp: against a manifest; shard_check_plain.cpp:
// a shard set without one). Not a public interface.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "converters/image_survey.h"
#include "converters/shard_check.h"
#include "core/image.h"
#include "core/tfrecord.h"

namespace fastnn {
class Progress;
}

namespace fastnn::converters {

class RankGroup;

// Checks one record: "" when fine, else the problem; sets *label (>= 0) when the label is usable and
// fills *facts (image_survey.h) as far as it got; with `measure` it decodes the image (if the check
// did not anyway) and sums its pixels into *facts. Called from several threads at once; `pixels` is
// the calling thread's decode buffer.
using RecordCheck = std::function<std::string(std::string_view record, bool measure, std::vector<uint8_t>* pixels,
                                              int64_t* label, RecordFacts* facts)>;

// The survey's part in one shard's scan (nullptr: no survey).
struct ShardSurvey {
  uint64_t measure_first = 0;  // records decoded for the channel statistics (UINT64_MAX: all)
  SampleTable* samples = nullptr;
  size_t split = 0, shard = 0;
  std::string split_name;
};

// The channel-statistics budget per shard (image_survey.h): all records with --decode, else
// ceil(stats_records / shards).
uint64_t measure_per_shard(const CheckOptions& o, size_t shards);

// Sums the pixels of the image *f describes (geometry, format and bytes set) into *f: from *pixels when
// the check decoded it already there (`decoded`, at the stored channels), from the bytes for raw,
// else decoding into *pixels first. Throws FormatError when the image does not decode.
void measure_record(bool decoded, const ImageLimits& limits, std::vector<uint8_t>* pixels, RecordFacts* f);

// Counts an error on the shard, keeping the first max_listed messages.
void add_error(ShardReport* r, size_t max_listed, std::string msg);

// Reads every record of `path` (framing, both CRCs) and runs `check` on each, in parallel (oneTBB,
// inside the caller's arena). Fills r->bytes, r->records, r->histogram (num_classes > 0) or
// r->label_counts (num_classes == 0: the classes are unknown), and r's errors, each naming the record
// index and byte offset. A framing or CRC error ends the shard (nothing after it can be trusted).
// Returns false when the file could not be opened at all (the error is recorded).
// With `survey`, also fills r->survey and offers samples to survey->samples.
bool scan_shard(const RecordCheck& check, int64_t num_classes, const std::string& path, Compression compression,
                size_t max_listed, Progress* progress, ShardReport* r, const ShardSurvey* survey = nullptr);

// Under mpirun: each rank checked the shards dealt to it (positions `mine` of `reports`, dealt by
// job_owner); afterwards every rank holds every shard's counts, histogram, label counts and errors. The
// survey (sizes, channel statistics) travels with them; the samples with share_samples.
void share_shard_reports(RankGroup& group, const std::vector<size_t>& mine, std::vector<ShardReport*>& reports);

// Under mpirun: every rank's sample thumbnails to every rank's table, where the same rule as one
// process's keeps the first of each class by (split, shard, record).
void share_samples(RankGroup& group, SampleTable& samples);

// Checks this rank's shards (`mine`: positions in `reports`) in parallel within options.threads by
// check_one(position, progress), with a progress line of `my_records` (0: unknown); under mpirun the
// step is settled and then every rank's reports and samples are shared.
void check_my_shards(const CheckOptions& options, RankGroup* group, uint64_t my_records, const std::vector<size_t>& mine,
                     const std::vector<ShardReport*>& reports, SampleTable* samples,
                     const std::function<void(size_t job, Progress* progress)>& check_one);

// The check of a folder or pattern list without manifest.json (shard_check.h).
CheckReport check_plain_shards(const CheckOptions& options);

}  // namespace fastnn::converters
