#include "converters/tfrecord_source.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <oneapi/tbb/parallel_for.h>

#include "converters/file_io.h"
#include "converters/image_example.h"
#include "converters/rank_group.h"
#include "core/check.h"
#include "core/crc32c.h"
#include "core/dataset_files.h"
#include "core/input_file.h"
#include "core/manifest.h"
#include "core/progress.h"
#include "core/tfrecord.h"

namespace fastnn::converters {
namespace {

// What the index pass learns from one input file.
struct FileScan {
  std::vector<SampleRef> samples;
  std::vector<SkippedSample> skipped;
  int64_t max_label = -1;
};

// Every rank's file indexes on every rank (file i was indexed by rank i mod size).
void share_file_scans(RankGroup& group, std::vector<FileScan>& scans) {
  std::vector<std::string> items(scans.size());
  for (size_t i = static_cast<size_t>(group.rank()); i < scans.size(); i += static_cast<size_t>(group.size())) {
    ItemWriter w;
    w.u64(static_cast<uint64_t>(scans[i].max_label)).pods(scans[i].samples).u64(scans[i].skipped.size());
    for (const SkippedSample& s : scans[i].skipped) w.text(s.source).text(s.reason);
    items[i] = w.take();
    scans[i] = {};
  }
  share_items(group, items);
  for (size_t i = 0; i < scans.size(); ++i) {
    ItemReader in(items[i]);
    scans[i].max_label = static_cast<int64_t>(in.u64());
    scans[i].samples = in.pods<SampleRef>();
    scans[i].skipped.resize(in.u64());
    for (SkippedSample& s : scans[i].skipped) s.source = in.text(), s.reason = in.text();
    std::string().swap(items[i]);
  }
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// The checks a record must pass to be indexed (also what the encoder relies on).
int64_t check_sample(const ForeignRecordParser& parser, std::string_view rec, int64_t labels_offset,
                     int64_t num_classes) {
  const ForeignRecord r = parser.parse(rec);
  const int64_t label = r.label - labels_offset;
  if (label < 0)
    throw FormatError(labels_offset == 0 ? str("label ", r.label, " is negative")
                                         : str("label ", r.label, " minus labels_offset ", labels_offset, " is negative"));
  if (num_classes > 0 && label >= num_classes)
    throw FormatError(str("label ", label, " is outside the ", num_classes, " classes 0..", num_classes - 1));
  if (label >= kMaxClasses) throw FormatError(str("label ", label, " is not below ", kMaxClasses));
  if (r.format != std::string_view("raw")) {
    // A cut-short image: its end marker must be near the end of the bytes.
    const std::string_view e = r.encoded;
    check_encoded_image(e, e.substr(e.size() - std::min(e.size(), kImageTailBytes)), e.size(), parser.limits());
  }
  return label;
}

FileScan scan_file(const std::string& path, uint32_t file, const ForeignRecordParser& parser,
                   const TFRecordSourceOptions& o, int64_t num_classes, bool skip_bad, Progress* progress) {
  FileScan out;
  const Compression comp = detect_compression(path);
  if (comp != Compression::kNone)
    throw ConfigError(str(path, ": a ", compression_name(comp),
                          "-compressed TFRecord file; convert tfrecord reads records at random offsets, so it needs "
                          "plain files (decompress it first)"));
  TFRecordReader reader(path);
  std::string_view rec;
  uint64_t reported = 0;
  uint64_t next_offset = 0;  // where the next frame starts (plain files: frames back to back)
  for (;;) {
    try {
      if (!reader.next(&rec)) break;
    } catch (const FormatError& e) {
      // Framing or CRC: nothing after this point of the file can be trusted.
      if (!skip_bad) throw;
      out.skipped.push_back({str(path, "#", next_offset), str("rest of the file unreadable: ", e.what())});
      break;
    }
    const uint64_t offset = reader.record_offset();
    next_offset = offset + tfrecord_frame_size(rec.size());
    try {
      if (rec.size() > UINT32_MAX) throw FormatError(str("record of ", rec.size(), " bytes"));
      SampleRef s;
      s.offset = offset;
      s.length = static_cast<uint32_t>(rec.size());
      s.file = file;
      s.label = static_cast<int32_t>(check_sample(parser, rec, o.labels_offset, num_classes));
      out.max_label = std::max<int64_t>(out.max_label, s.label);
      out.samples.push_back(s);
    } catch (const FormatError& e) {
      const std::string where = str(path, ": record ", reader.record_index(), " at offset ", offset);
      if (!skip_bad) throw FormatError(str(where, ": ", e.what()));
      out.skipped.push_back({str(path, "#", offset), e.what()});
    }
    const uint64_t done = reader.source_bytes_read();
    if (progress && done > reported) {
      progress->add(done - reported);
      reported = done;
    }
  }
  return out;
}

class TFRecordEncoder : public SampleEncoder {
 public:
  TFRecordEncoder(const std::vector<std::string>* paths, const ForeignRecordParser* parser)
      : paths_(paths), files_(paths), parser_(parser) {}

  void encode(const SampleRef& s, std::string* record, RecordInfo* info) override {
    frame_.resize(tfrecord_frame_size(s.length));
    files_.read(s.file, s.offset, frame_.data(), frame_.size());
    uint64_t length;
    uint32_t length_crc, data_crc;
    std::memcpy(&length, frame_.data(), 8);
    std::memcpy(&length_crc, frame_.data() + 8, 4);
    std::memcpy(&data_crc, frame_.data() + 12 + s.length, 4);
    const std::string_view data(frame_.data() + 12, s.length);
    if (length != s.length || length_crc != crc32c_mask(crc32c(frame_.data(), 8)) ||
        data_crc != crc32c_mask(crc32c(data)))
      throw FormatError(str((*paths_)[s.file], ": the record at offset ", s.offset,
                            " changed since it was scanned (length or CRC differs)"));
    const ForeignRecord r = parser_->parse(data);
    serialize_image_example(r.encoded, r.format, r.height, r.width, r.channels, s.label, -1, record);
    *info = {r.format, r.height, r.width, r.channels};
  }

 private:
  const std::vector<std::string>* paths_;
  FileHandles files_;
  const ForeignRecordParser* parser_;
  std::string frame_;
};

// The class names of inputs from several folders (one conversion's parts merged, say): each folder's
// labels.txt, where it has one, must number the classes as the others do, or a record's label would
// silently name another class than in its own folder. A part converted alone lists only the classes
// up to its largest label, so one list may extend another; the longest is taken. *path: its file.
std::vector<std::string> agreed_labels_beside(const std::vector<std::string>& files, std::string* path) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& file : files) {
    const std::string folder = folder_of(file);
    if (!seen.insert(folder).second) continue;
    std::optional<std::vector<std::string>> l = read_labels_in(folder);
    if (!l) continue;
    const std::string here = folder + "/" + kLabelsFileName;
    for (size_t c = 0; c < std::min(l->size(), names.size()); ++c)
      if ((*l)[c] != names[c])
        throw ConfigError(str(*path, " says class ", c, " is \"", names[c], "\", ", here, " says \"", (*l)[c],
                              "\": the inputs number their classes differently, so their labels would name other "
                              "classes once merged; convert the parts with one class map (--class-names or "
                              "--labels-from), or give --labels-file to say which map the labels follow"));
    if (l->size() > names.size()) {
      names = std::move(*l);
      *path = here;
    }
  }
  return names;
}

}  // namespace

DatasetIndex TFRecordSource::scan(const ScanOptions& scan) {
  const TFRecordSourceOptions& o = options_;
  if (o.patterns.empty()) throw ConfigError("tfrecord needs at least one --input file or pattern");
  if (o.labels_offset < 0) throw ConfigError("--labels-offset must not be negative");
  if (!o.split.empty()) validate_split_name(o.split);
  DatasetIndex index;
  index.dataset = "tfrecord";
  index.files = expand_patterns(o.patterns, "", "--input");
  if (index.files.size() > UINT32_MAX) throw ConfigError("more than 2^32 input files");

  // Classes known up front: the labels file, or --num-classes.
  std::vector<std::string> names;
  std::string labels_path = o.labels_file;
  if (labels_path.empty()) {
    names = agreed_labels_beside(index.files, &labels_path);
  } else {
    names = parse_labels_txt(read_regular_file(labels_path, kMaxLabelsBytes), labels_path);
  }
  if (!names.empty()) {
    if (o.labels_offset >= static_cast<int64_t>(names.size()))
      throw ConfigError(str(labels_path, " names ", names.size(), " classes; --labels-offset ", o.labels_offset,
                            " leaves none"));
    names.erase(names.begin(), names.begin() + o.labels_offset);
  }
  int64_t num_classes = static_cast<int64_t>(names.size());
  if (o.num_classes > 0) {
    if (num_classes > 0 && num_classes != o.num_classes)
      throw ConfigError(str("--num-classes ", o.num_classes, " but ", labels_path, " names ", num_classes, " classes",
                            o.labels_offset ? " (after --labels-offset)" : ""));
    num_classes = o.num_classes;
  }

  // Splits, from --split or the file names.
  std::vector<std::string> split_of(index.files.size());
  for (size_t i = 0; i < index.files.size(); ++i) {
    split_of[i] = o.split.empty() ? split_of_file_name(index.files[i].substr(index.files[i].rfind('/') + 1)) : o.split;
    if (split_of[i].empty())
      throw ConfigError(str(index.files[i], ": no train, validation or test in the file name to tell its split; "
                            "give --split"));
  }

  // The index pass: files in parallel, results kept in file order.
  // Under mpirun each rank indexes every size-th file, and the file indexes travel to every rank.
  const size_t ranks = scan.group ? static_cast<size_t>(scan.group->size()) : 1;
  const size_t rank = scan.group ? static_cast<size_t>(scan.group->rank()) : 0;
  uint64_t total_bytes = 0, my_bytes = 0;
  for (size_t i = 0; i < index.files.size(); ++i) {
    const uint64_t bytes = file_size(index.files[i]);
    total_bytes += bytes;
    if (i % ranks == rank) my_bytes += bytes;
  }
  std::vector<FileScan> scans(index.files.size());
  Progress progress("scan", my_bytes, "bytes");
  progress.set_silent(scan.quiet);
  tbb::parallel_for(size_t{0}, index.files.size(), [&](size_t i) {
    if (i % ranks != rank) return;
    scans[i] = scan_file(index.files[i], static_cast<uint32_t>(i), parser_, o, num_classes, scan.skip_bad, &progress);
  });
  progress.finish();
  if (scan.group) share_file_scans(*scan.group, scans);
  index.source_bytes = total_bytes;

  int64_t max_label = -1;
  for (const FileScan& s : scans) max_label = std::max(max_label, s.max_label);
  if (num_classes == 0) {
    if (max_label < 0) throw FormatError(str(o.patterns.front(), ": no usable record in ", index.files.size(), " files"));
    num_classes = max_label + 1;
  }
  if (names.empty())
    for (int64_t c = 0; c < num_classes; ++c) names.push_back(std::to_string(c));
  index.class_names = std::move(names);

  // Splits in the order train, validation, test, then others as first seen.
  std::map<std::string, size_t> position;
  for (const char* s : {"train", "validation", "test"})
    for (size_t i = 0; i < index.files.size(); ++i)
      if (split_of[i] == s && !position.count(s)) {
        position[s] = index.splits.size();
        index.splits.push_back({});
        index.splits.back().name = s;
      }
  for (size_t i = 0; i < index.files.size(); ++i)
    if (!position.count(split_of[i])) {
      position[split_of[i]] = index.splits.size();
      index.splits.push_back({});
      index.splits.back().name = split_of[i];
    }
  for (SplitIndex& s : index.splits) s.equal_shards = s.name == "train";
  for (size_t i = 0; i < index.files.size(); ++i) {
    SplitIndex& s = index.splits[position[split_of[i]]];
    s.samples.insert(s.samples.end(), scans[i].samples.begin(), scans[i].samples.end());
    s.skipped.insert(s.skipped.end(), scans[i].skipped.begin(), scans[i].skipped.end());
    scans[i] = {};
  }
  for (const SplitIndex& s : index.splits)
    if (s.samples.empty()) throw FormatError(str("split ", s.name, ": no usable record in its input files"));
  return index;
}

std::unique_ptr<SampleEncoder> TFRecordSource::make_encoder(const DatasetIndex& index) const {
  return std::make_unique<TFRecordEncoder>(&index.files, &parser_);
}

std::string TFRecordSource::describe(const DatasetIndex& index, const SampleRef& s) const {
  return describe_record(index, s);
}

}  // namespace fastnn::converters
