#include "converters/base64_tsv.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include "converters/file_io.h"
#include "converters/rank_group.h"
#include "core/base64.h"
#include "core/check.h"
#include "core/logging.h"
#include "core/progress.h"

namespace fastnn::converters {
namespace {

enum class LineStatus : uint8_t { kGood, kBlank, kBad };

struct LineResult {
  LineStatus status = LineStatus::kGood;
  int32_t label = 0;
  uint64_t b64_offset = 0;  // in the file
  uint32_t b64_length = 0;
  std::string reason;
};

// Whole lines of one file region and what validation found in them.
struct Block {
  std::string data;
  uint64_t file_offset = 0;      // of data[0]
  uint64_t first_line = 0;       // 1-based number of the first line
  std::vector<uint32_t> starts;  // line starts in data; line i ends before starts[i+1] - 1 (its '\n')
  std::vector<uint32_t> ends;    // line ends (exclusive, '\n' not included)
  std::vector<LineResult> results;
};

constexpr int64_t kMaxInferredLabel = (int64_t{1} << 24) - 1;

}  // namespace

bool parse_label(std::string_view f, int64_t max_label, int32_t* label, std::string* why) {
  if (f.empty()) {
    *why = "empty label";
    return false;
  }
  int64_t v = 0;
  bool digits = f.size() <= 12 && std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::from_chars(f.data(), f.data() + f.size(), v).ec != std::errc()) {
    std::string shown(f.substr(0, 32));
    *why = str("label \"", shown, f.size() > 32 ? "..." : "", "\" is not a non-negative integer");
    return false;
  }
  if (v > max_label) {
    *why = str("label ", v, " is outside 0..", max_label);
    return false;
  }
  *label = static_cast<int32_t>(v);
  return true;
}

TsvLine parse_tsv_line(std::string_view line, bool label_first, int64_t max_label, const ImageLimits& limits,
                       std::string* buf) {
  TsvLine r;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) {
    r.status = TsvLine::kBlank;
    return r;
  }
  r.status = TsvLine::kBad;
  if (line.starts_with("\xEF\xBB\xBF")) {  // what Windows editors put at a text file's start
    r.reason = "starts with a UTF-8 byte-order mark (bytes EF BB BF), which is neither base64 nor a label: save the "
               "file without it";
    return r;
  }
  size_t tab = line.find('\t');
  if (tab == std::string_view::npos || line.find('\t', tab + 1) != std::string_view::npos) {
    r.reason = str("expected 2 tab-separated fields (", label_first ? "label, base64" : "base64, label", "), found ",
                   std::count(line.begin(), line.end(), '\t') + 1);
    return r;
  }
  std::string_view a = line.substr(0, tab), c = line.substr(tab + 1);
  std::string_view b64 = label_first ? c : a, lab = label_first ? a : c;
  const size_t b64_pos = label_first ? tab + 1 : 0;
  if (!parse_label(lab, max_label, &r.label, &r.reason)) return r;
  buf->resize(base64_max_decoded_size(b64.size()));
  Base64Result d = base64_decode(b64, reinterpret_cast<uint8_t*>(buf->data()), buf->size());
  if (!d.ok) {
    r.reason = str("invalid base64 at column ", b64_pos + d.error_offset + 1, ": ", d.error);
    return r;
  }
  std::string_view img(buf->data(), d.size);
  try {
    check_encoded_image(img, img.substr(img.size() - std::min(img.size(), kImageTailBytes)), img.size(), limits);
  } catch (const FormatError& e) {
    r.reason = e.what();
    return r;
  }
  r.status = TsvLine::kGood;
  r.b64_pos = b64_pos;
  r.b64_length = b64.size();
  r.image_bytes = d.size;
  return r;
}

namespace {

// What indexing one input file found.
struct TsvFileScan {
  std::vector<SampleRef> samples;
  std::vector<SkippedSample> skipped;
  uint64_t blank = 0;       // blank lines (counted as ignored)
  uint64_t bytes = 0;
  int64_t largest = -1;     // the largest label, and where
  std::string largest_at;
};

// One file's lines, indexed and validated (blocks read in order, validated in parallel).
TsvFileScan scan_tsv_file(const Base64TsvOptions& o, uint32_t file, int64_t max_label, bool skip_bad,
                          Progress& progress) {
  TsvFileScan out;
  const int concurrency = std::max(1, tbb::this_task_arena::max_concurrency());
  tbb::enumerable_thread_specific<std::string> decode_buffers;
  // Blocks are reused through a free list (the pipeline passes raw pointers; the pool owns them, so
  // an exception mid-pipeline leaks nothing). At most `tokens` are in flight.
  const size_t tokens = static_cast<size_t>(2 * concurrency);
  std::vector<Block> pool(tokens);
  std::vector<Block*> free_blocks;
  std::mutex pool_mu;
  for (Block& b : pool) free_blocks.push_back(&b);

  const std::string& path = o.files[file];
  Fd fd(path);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::string carry;            // a partial line from the previous block
  uint64_t offset = 0;          // file offset of carry[0]
  uint64_t next_line = 1;
  bool eof = false;

  auto validate = [&](Block* b) {
    std::string& buf = decode_buffers.local();
    b->results.resize(b->starts.size());
    for (size_t i = 0; i < b->starts.size(); ++i) {
      LineResult& r = b->results[i];
      TsvLine t = parse_tsv_line(std::string_view(b->data.data() + b->starts[i], b->ends[i] - b->starts[i]),
                                 o.label_first, max_label, o.record.limits, &buf);
      r.status = t.status == TsvLine::kGood ? LineStatus::kGood
                 : t.status == TsvLine::kBlank ? LineStatus::kBlank : LineStatus::kBad;
      r.label = t.label;
      r.reason = std::move(t.reason);
      r.b64_offset = b->file_offset + b->starts[i] + t.b64_pos;
      r.b64_length = static_cast<uint32_t>(t.b64_length);
    }
  };

  tbb::parallel_pipeline(
      tokens,
      tbb::make_filter<void, Block*>(
          tbb::filter_mode::serial_in_order,
          [&](tbb::flow_control& fc) -> Block* {
            if (eof && carry.empty()) {
              fc.stop();
              return nullptr;
            }
            Block* b;
            {
              std::lock_guard<std::mutex> lock(pool_mu);
              FASTNN_CHECK(!free_blocks.empty(), "base64-tsv scan: block pool exhausted");
              b = free_blocks.back();
              free_blocks.pop_back();
            }
            b->starts.clear();
            b->ends.clear();
            // Read until the buffer holds at least one whole line (or the file ends).
            size_t want = o.block_bytes;
            while (!eof) {
              size_t old = carry.size();
              carry.resize(old + want);
              ssize_t r = ::read(fd.get(), carry.data() + old, want);
              if (r < 0) {
                carry.resize(old);
                if (errno == EINTR) continue;
                throw_io_error(path, str("read at offset ", offset + old));
              }
              carry.resize(old + static_cast<size_t>(r));
              progress.add(static_cast<uint64_t>(r));
              if (r == 0) eof = true;
              if (carry.find('\n', old) != std::string::npos) break;
              if (carry.size() > o.max_line_bytes)
                throw FormatError(str(path, ":", next_line, ": line longer than the limit of ", o.max_line_bytes,
                                      " bytes (at offset ", offset, ")"));
            }
            size_t cut = eof ? carry.size() : carry.rfind('\n') + 1;
            b->data.assign(carry, 0, cut);
            carry.erase(0, cut);
            b->file_offset = offset;
            offset += cut;
            b->first_line = next_line;
            for (size_t p = 0; p < b->data.size();) {
              const char* nl = static_cast<const char*>(std::memchr(b->data.data() + p, '\n', b->data.size() - p));
              size_t end = nl ? static_cast<size_t>(nl - b->data.data()) : b->data.size();
              if (end - p > o.max_line_bytes)
                throw FormatError(str(path, ":", next_line + b->starts.size(), ": line longer than the limit of ",
                                      o.max_line_bytes, " bytes"));
              b->starts.push_back(static_cast<uint32_t>(p));
              b->ends.push_back(static_cast<uint32_t>(end));
              p = end + 1;
            }
            next_line += b->starts.size();
            return b;
          }) &
          tbb::make_filter<Block*, Block*>(tbb::filter_mode::parallel,
                                           [&](Block* b) {
                                             validate(b);
                                             return b;
                                           }) &
          tbb::make_filter<Block*, void>(tbb::filter_mode::serial_in_order, [&](Block* b) {
            for (size_t i = 0; i < b->results.size(); ++i) {
              const LineResult& r = b->results[i];
              const uint64_t line = b->first_line + i;
              // Samples keep their line number in 32 bits (SampleRef::aux).
              if (line > UINT32_MAX) throw FormatError(str(path, ":", line, ": more than 2^32 - 1 lines"));
              if (r.status == LineStatus::kBlank) {
                ++out.blank;
              } else if (r.status == LineStatus::kBad) {
                if (!skip_bad) throw FormatError(str(path, ":", line, ": ", r.reason));
                out.skipped.push_back({str(path, ":", line), r.reason});
              } else {
                SampleRef s;
                s.offset = r.b64_offset;
                s.length = r.b64_length;
                s.file = file;
                s.label = r.label;
                s.aux = static_cast<uint32_t>(line);
                out.samples.push_back(s);
                if (r.label > out.largest) {
                  out.largest = r.label;
                  out.largest_at = str(path, ":", line);
                }
              }
            }
            std::lock_guard<std::mutex> lock(pool_mu);
            free_blocks.push_back(b);
          }));
  out.bytes = offset;
  return out;
}

// Every rank's file indexes on every rank (file i was indexed by rank i mod size).
void share_tsv_scans(RankGroup& group, std::vector<TsvFileScan>& scans) {
  std::vector<std::string> items(scans.size());
  for (size_t i = static_cast<size_t>(group.rank()); i < scans.size(); i += static_cast<size_t>(group.size())) {
    const TsvFileScan& f = scans[i];
    ItemWriter w;
    w.pods(f.samples).u64(f.blank).u64(f.bytes).u64(static_cast<uint64_t>(f.largest)).text(f.largest_at);
    w.u64(f.skipped.size());
    for (const SkippedSample& s : f.skipped) w.text(s.source).text(s.reason);
    items[i] = w.take();
  }
  share_items(group, items);
  for (size_t i = 0; i < scans.size(); ++i) {
    ItemReader in(items[i]);
    TsvFileScan& f = scans[i];
    f.samples = in.pods<SampleRef>();
    f.blank = in.u64();
    f.bytes = in.u64();
    f.largest = static_cast<int64_t>(in.u64());
    f.largest_at = in.text();
    f.skipped.resize(in.u64());
    for (SkippedSample& s : f.skipped) s.source = in.text(), s.reason = in.text();
    std::string().swap(items[i]);
  }
}

}  // namespace

DatasetIndex Base64TsvSource::scan(const ScanOptions& scan) {
  const Base64TsvOptions& o = options_;
  if (o.files.empty()) throw ConfigError("base64-tsv needs at least one --input file");
  validate_split_name(o.split);
  if (o.num_classes < 0 || o.num_classes > kMaxInferredLabel + 1)
    throw ConfigError(str("--num-classes must be in 1..", kMaxInferredLabel + 1));
  const int64_t max_label = o.num_classes > 0 ? o.num_classes - 1 : kMaxInferredLabel;
  // Offsets and lengths inside a block are 32-bit.
  if (o.max_line_bytes < 1 || o.max_line_bytes > kMaxLineBytesLimit)
    throw ConfigError(str("--max-line-bytes must be in 1..", kMaxLineBytesLimit, ", not ", o.max_line_bytes));
  DatasetIndex index;
  index.dataset = "base64-tsv";
  SplitIndex split;
  split.name = o.split;
  split.equal_shards = o.split == "train";

  // Under mpirun each rank indexes every size-th file, and the file indexes travel to every rank.
  const size_t ranks = scan.group ? static_cast<size_t>(scan.group->size()) : 1;
  const size_t rank = scan.group ? static_cast<size_t>(scan.group->rank()) : 0;
  uint64_t my_bytes = 0;
  for (size_t i = 0; i < o.files.size(); ++i)
    if (i % ranks == rank) my_bytes += file_size(o.files[i]);
  Progress progress("scan", my_bytes, "bytes");
  progress.set_silent(scan.quiet);
  std::vector<TsvFileScan> scans(o.files.size());
  for (uint32_t file = 0; file < o.files.size(); ++file) {
    index.files.push_back(o.files[file]);
    if (file % ranks == rank) scans[file] = scan_tsv_file(o, file, max_label, scan.skip_bad, progress);
  }
  if (scan.group) share_tsv_scans(*scan.group, scans);
  int64_t largest = -1;
  std::string largest_at;  // "file:line" of the largest label, for the class-count check
  for (TsvFileScan& f : scans) {
    split.samples.insert(split.samples.end(), f.samples.begin(), f.samples.end());
    split.skipped.insert(split.skipped.end(), f.skipped.begin(), f.skipped.end());
    split.ignored_files += f.blank;
    index.source_bytes += f.bytes;
    if (f.largest > largest) largest = f.largest, largest_at = f.largest_at;
    f = {};
  }
  progress.finish();

  const int64_t classes = o.num_classes > 0 ? o.num_classes : largest + 1;
  if (classes < 1) throw FormatError(str(o.files.front(), ": no usable line in the input"));
  if (o.num_classes == 0 && o.class_names.empty()) {
    // An inferred class count is only as good as the largest label: one outlier label must not make
    // millions of empty classes (and a manifest of per-shard histograms that size).
    std::vector<uint8_t> used(static_cast<size_t>(classes), 0);
    int64_t distinct = 0;
    for (const SampleRef& s : split.samples)
      if (!used[s.label]) used[s.label] = 1, ++distinct;
    const int64_t empty = classes - distinct;
    if (empty * 2 > classes) {
      std::string msg = str("the largest label, ", largest, " at ", largest_at, ", makes ", classes, " classes of which ",
                            empty, " have no sample");
      if (classes > kMaxSparseInferredClasses)
        throw FormatError(str(msg, "; pass --num-classes (and --class-names) if that many classes is intended"));
      log_warn(msg, "; pass --num-classes to state the class count");
    }
  }
  index.class_names = o.class_names;
  if (index.class_names.empty())
    for (int64_t i = 0; i < classes; ++i) index.class_names.push_back(std::to_string(i));
  if (static_cast<int64_t>(index.class_names.size()) != classes)
    throw ConfigError(str(index.class_names.size(), " class names given for ", classes, " classes"));
  index.splits.push_back(std::move(split));
  return index;
}

std::string Base64TsvSource::describe(const DatasetIndex& index, const SampleRef& s) const {
  return str(index.files[s.file], ":", s.aux);
}

namespace {

class Base64Encoder : public SampleEncoder {
 public:
  Base64Encoder(const std::vector<std::string>* paths, ImageRecordOptions options) : files_(paths), maker_(options) {}
  void encode(const SampleRef& s, std::string* record, RecordInfo* info) override {
    text_.resize(s.length);
    files_.read(s.file, s.offset, text_.data(), s.length);
    bytes_.resize(base64_max_decoded_size(s.length));
    Base64Result d = base64_decode(text_, reinterpret_cast<uint8_t*>(bytes_.data()), bytes_.size());
    if (!d.ok) throw FormatError(str("invalid base64 at offset ", s.offset + d.error_offset, " (did the file change?)"));
    bytes_.resize(d.size);
    maker_.make(bytes_, s.label, record, info);
  }

 private:
  FileHandles files_;
  ImageRecordMaker maker_;
  std::string text_, bytes_;
};

}  // namespace

std::unique_ptr<SampleEncoder> Base64TsvSource::make_encoder(const DatasetIndex& index) const {
  return std::make_unique<Base64Encoder>(&index.files, options_.record);
}

}  // namespace fastnn::converters
