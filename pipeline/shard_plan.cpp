#include "pipeline/shard_plan.h"

#include <filesystem>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/manifest.h"
#include "pipeline/batch.h"

namespace fastnn::pipeline {

bool FileList::counts_known() const {
  for (const auto& f : files)
    if (f.records < 0) return false;
  return true;
}

uint64_t FileList::total_records() const {
  FASTNN_CHECK(counts_known(), "record counts of ", name, " are not known");
  uint64_t n = 0;
  for (const auto& f : files) n = checked_add(n, static_cast<uint64_t>(f.records), str(name, ": total record count"));
  return n;
}

std::string describe_source(const FileList& list, const SampleSource& s) {
  if (s.file == SampleSource::kCacheFile) return str("cache record ", s.record, " at offset ", s.offset);
  const std::string& path = s.file < list.files.size() ? list.files[s.file].path : "?";
  return str(path, ": record ", s.record, " at offset ", s.offset);
}

FileList file_list_from_manifest(const std::string& dir, const std::string& split) {
  Manifest m = read_manifest(dir);
  const SplitInfo* s = m.find_split(split);
  if (s == nullptr) {
    std::string names;
    for (const auto& sp : m.splits) names += (names.empty() ? "" : ", ") + sp.name;
    throw ConfigError(str(dir, ": no split '", split, "' in the manifest (it has: ", names, ")"));
  }
  FileList list;
  list.name = str(dir, " (split ", split, ")");
  list.compression_known = true;
  list.compression = parse_compression(m.compression);
  list.num_classes = m.num_classes();
  for (const auto& sh : s->shards) list.total_bytes = checked_add(list.total_bytes, sh.bytes, "shard bytes");
  for (const auto& sh : s->shards)
    list.files.push_back(
        {(std::filesystem::path(dir) / sh.file).string(), static_cast<int64_t>(sh.records), sh.label_histogram});
  if (list.files.empty()) throw ConfigError(str(list.name, ": the split has no shards"));
  return list;
}

FileList file_list_from_paths(std::vector<std::string> paths, std::vector<int64_t> counts) {
  if (paths.empty()) throw ConfigError("dataset: no input files");
  if (!counts.empty() && counts.size() != paths.size())
    throw ConfigError(str("dataset: ", counts.size(), " record counts for ", paths.size(), " files"));
  FileList list;
  list.name = paths.size() == 1 ? paths[0] : str(paths.size(), " files");
  for (size_t i = 0; i < paths.size(); ++i)
    list.files.push_back({std::move(paths[i]), counts.empty() ? -1 : counts[i]});
  return list;
}

void count_records(FileList* list, bool verify_data_crc) {
  for (auto& f : list->files) {
    if (f.records >= 0) continue;
    TFRecordReaderOptions opt;
    opt.compression = list->compression_known ? list->compression : detect_compression(f.path);
    opt.verify_data_crc = verify_data_crc;
    TFRecordReader reader(f.path, opt);
    std::string_view rec;
    int64_t n = 0;
    while (reader.next(&rec)) ++n;
    f.records = n;
  }
}

const char* shard_mode_name(ShardMode m) {
  switch (m) {
    case ShardMode::kAll: return "all";
    case ShardMode::kByFile: return "by-file";
    case ShardMode::kByRecord: return "by-record";
  }
  return "?";
}

ShardPlan plan_shards(const FileList& list, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw ConfigError(str("shard: rank ", rank, " of world ", world, " (need 0 <= rank < world)"));
  ShardPlan p;
  p.rank = rank;
  p.world = world;
  p.total_records = list.total_records();
  const size_t nf = list.files.size();
  if (world == 1) {
    p.mode = ShardMode::kAll;
    for (size_t i = 0; i < nf; ++i) p.files.push_back(static_cast<uint32_t>(i));
    p.records_per_rank = p.total_records;
    return p;
  }
  if (nf % static_cast<size_t>(world) == 0) {
    std::vector<uint64_t> per_rank(world, 0);
    for (size_t i = 0; i < nf; ++i)
      per_rank[i % world] = checked_add(per_rank[i % world], static_cast<uint64_t>(list.files[i].records), "records per rank");
    bool equal = true;
    for (int r = 1; r < world; ++r) equal = equal && per_rank[r] == per_rank[0];
    if (equal) {
      p.mode = ShardMode::kByFile;
      for (size_t i = static_cast<size_t>(rank); i < nf; i += world) p.files.push_back(static_cast<uint32_t>(i));
      p.records_per_rank = per_rank[0];
      return p;
    }
  }
  p.mode = ShardMode::kByRecord;
  for (size_t i = 0; i < nf; ++i) p.files.push_back(static_cast<uint32_t>(i));
  p.records_per_rank = p.total_records / static_cast<uint64_t>(world);
  p.dropped_per_epoch = p.total_records - p.records_per_rank * world;
  return p;
}

}  // namespace fastnn::pipeline
