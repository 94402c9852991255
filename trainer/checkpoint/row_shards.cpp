// Row-partitioned arrays: shard file names, writing one rank's file, validating the meta's records,
// verifying files and reading row ranges (row_shards.h).
#include "trainer/checkpoint/row_shards.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/crc32c.h"
#include "trainer/checkpoint/checkpoint_manager.h"

namespace fastnn::checkpoint {
namespace {

constexpr uint64_t kMaxElements = uint64_t{1} << 60;

std::string dir_of(const std::string& prefix) {
  const std::string d = std::filesystem::path(prefix).parent_path().string();
  return d.empty() ? "." : d;
}

// Elements per row: the product of every dim after the first.
uint64_t row_elements(std::span<const int64_t> global_shape) { return element_count(global_shape.subspan(1)); }

std::vector<int64_t> local_shape(std::span<const int64_t> global_shape, int64_t rows) {
  std::vector<int64_t> s(global_shape.begin(), global_shape.end());
  s[0] = rows;
  return s;
}

std::vector<int64_t> dims(const google::protobuf::RepeatedField<int64_t>& f) { return {f.begin(), f.end()}; }

bool parse_int(std::string_view s, int* out) {
  if (s.empty() || (s[0] == '0' && s.size() > 1)) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The file's tensors are exactly the record's arrays, F32 with the record's local shapes.
void check_contents(const SafetensorsFile& f, const RowShardFile& rec, const std::string& meta_file) {
  if (f.arrays().size() != static_cast<size_t>(rec.arrays_size()))
    throw FormatError(str(f.name(), ": ", f.arrays().size(), " tensors, but ", meta_file, " records ", rec.arrays_size()));
  for (const RowShardArray& a : rec.arrays()) {
    const ArrayView* v = f.find(a.name());
    if (!v) throw FormatError(str(f.name(), ": no tensor '", a.name(), "', which ", meta_file, " records"));
    const std::vector<int64_t> want = local_shape(dims(a.global_shape()), a.row_end() - a.row_begin());
    if (v->dtype != DType::kF32 || v->shape != want)
      throw FormatError(str(f.name(), ": tensor '", a.name(), "' is ", safetensors_dtype_name(v->dtype), " ", shape_string(v->shape),
                            ", but ", meta_file, " records F32 ", shape_string(want), " (rows ", a.row_begin(), "..",
                            a.row_end(), " of ", shape_string(dims(a.global_shape())), ")"));
  }
}

// Opens a shard file and checks it against its record: size always, CRC32C and tensors when `crc`.
SafetensorsFile open_checked(const std::string& path, const RowShardFile& rec, const std::string& meta_file, bool crc,
                             const SafetensorsLimits& limits) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw FormatError(str(path, ": shard file of rank ", rec.rank(), " (of ", rec.world_size(), ") is missing; ",
                          meta_file, " records it"));
  if (static_cast<uint64_t>(st.st_size) != rec.size_bytes())
    throw FormatError(str(path, ": ", st.st_size, " bytes, but ", meta_file, " records ", rec.size_bytes(),
                          " (the file changed after the checkpoint was written)"));
  SafetensorsFile f = SafetensorsFile::open(path, limits);
  if (crc) {
    const uint32_t c = crc32c(f.bytes());
    if (c != rec.crc32c())
      throw FormatError(str(path, ": CRC32C 0x", std::hex, c, " does not match 0x", rec.crc32c(), std::dec,
                            " recorded in ", meta_file, " (the file changed after the checkpoint was written)"));
  }
  check_contents(f, rec, meta_file);
  return f;
}

}  // namespace

RowRange row_range(int64_t rows, int rank, int world) {
  FASTNN_CHECK(rows >= 0 && world >= 1 && rank >= 0 && rank < world, "row_range: rows ", rows, ", rank ", rank,
               ", world ", world);
  const int64_t base = rows / world, extra = rows % world;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::string shard_file_name(int64_t step, int rank, int world) {
  return str("ckpt-", step, ".shard-", rank, "-of-", world, ".safetensors");
}

std::string shard_path(const std::string& prefix, int rank, int world) {
  return str(prefix, ".shard-", rank, "-of-", world, ".safetensors");
}

std::string shard_temp_path(const std::string& dir, const std::string& shard_name) {
  return (std::filesystem::path(dir) / OutputDir::temp_name(shard_name)).string();
}

std::optional<std::pair<int, int>> parse_shard_suffix(std::string_view s) {
  constexpr std::string_view kHead = ".shard-", kOf = "-of-", kTail = ".safetensors";
  if (!s.starts_with(kHead) || !s.ends_with(kTail)) return std::nullopt;
  s = s.substr(kHead.size(), s.size() - kHead.size() - kTail.size());
  const size_t of = s.find(kOf);
  int rank = 0, world = 0;
  if (of == std::string_view::npos || !parse_int(s.substr(0, of), &rank) || !parse_int(s.substr(of + kOf.size()), &world))
    return std::nullopt;
  if (world < 1 || world > kMaxShardFiles || rank >= world) return std::nullopt;
  return std::pair{rank, world};
}

RowShardFile write_row_shard(const std::string& dir, int64_t step, int rank, int world,
                             std::span<const RowShardSlice> arrays, bool fsync) {
  FASTNN_CHECK(step >= 0, "row shard: step ", step, " < 0");
  FASTNN_CHECK(world >= 1 && world <= kMaxShardFiles && rank >= 0 && rank < world, "row shard: rank ", rank,
               " of world ", world);
  RowShardFile rec;
  rec.set_name(shard_file_name(step, rank, world));
  rec.set_rank(rank);
  rec.set_world_size(world);
  std::vector<ArrayView> views;
  std::set<std::string> names;
  for (const RowShardSlice& a : arrays) {
    FASTNN_CHECK(!a.name.empty() && names.insert(a.name).second, "row shard: array name '", a.name,
                 "' is empty or repeated");
    FASTNN_CHECK(!a.global_shape.empty() && a.global_shape.size() <= kMaxRank, "row shard: array '", a.name,
                 "': global shape ", shape_string(a.global_shape), " must have 1 to ", kMaxRank, " dims");
    FASTNN_CHECK(element_count(a.global_shape) <= kMaxElements, "row shard: array '", a.name, "' is too large");
    FASTNN_CHECK(0 <= a.row_begin && a.row_begin <= a.row_end && a.row_end <= a.global_shape[0], "row shard: array '",
                 a.name, "': rows ", a.row_begin, "..", a.row_end, " outside ", shape_string(a.global_shape));
    views.push_back(f32_view(a.name, local_shape(a.global_shape, a.row_end - a.row_begin), a.data, a.count));
    RowShardArray* r = rec.add_arrays();
    r->set_name(a.name);
    for (int64_t d : a.global_shape) r->add_global_shape(d);
    r->set_row_begin(a.row_begin);
    r->set_row_end(a.row_end);
    if (a.optimizer) r->set_optimizer(true);
  }
  make_directories(dir);
  const std::string tmp = shard_temp_path(dir, rec.name());
  try {
    const auto w = write_safetensors(tmp, views,
                                     {{"fastnn_step", std::to_string(step)},
                                      {"fastnn_shard", str(rank, " of ", world)}},
                                     fsync);
    rec.set_size_bytes(w.size_bytes);
    rec.set_crc32c(w.crc32c);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return rec;
}

void validate_row_shards(const CheckpointMeta& meta, const std::string& source) {
  const int n = meta.shard_files_size();
  if (n == 0) return;
  if (n > kMaxShardFiles) throw FormatError(str(source, ": ", n, " shard files, more than the limit of ", kMaxShardFiles));
  const RowShardFile& first = meta.shard_files(0);
  std::map<std::string, const RowShardArray*> arrays;  // name -> file 0's record
  for (const RowShardArray& a : first.arrays()) {
    const std::string where = str(source, ": shard_files[0] ('", first.name(), "') array '", a.name(), "': ");
    if (a.name().empty() || !arrays.emplace(a.name(), &a).second) throw FormatError(where + "empty or repeated name");
    if (a.global_shape_size() < 1 || a.global_shape_size() > static_cast<int>(kMaxRank))
      throw FormatError(str(where, "global shape has ", a.global_shape_size(), " dims (1 to ", kMaxRank, " allowed)"));
    uint64_t elements = 0;
    try {
      elements = element_count(dims(a.global_shape()));
    } catch (const Error& e) {
      throw FormatError(where + e.what());
    }
    if (elements > kMaxElements) throw FormatError(str(where, elements, " elements is more than the limit of 2^60"));
  }
  std::map<std::string, int64_t> next_row;  // the row the next file's range must begin at
  for (int i = 0; i < n; ++i) {
    const RowShardFile& f = meta.shard_files(i);
    const std::string where = str(source, ": shard_files[", i, "] ('", f.name(), "'): ");
    if (f.rank() != i || f.world_size() != n)
      throw FormatError(str(where, "rank ", f.rank(), " of ", f.world_size(), ", expected rank ", i, " of ", n));
    if (f.name() != shard_file_name(meta.step(), i, n))
      throw FormatError(str(where, "name should be '", shard_file_name(meta.step(), i, n), "'"));
    if (f.arrays_size() != static_cast<int>(arrays.size()))
      throw FormatError(str(where, f.arrays_size(), " arrays, but shard_files[0] has ", arrays.size()));
    std::set<std::string> seen;
    for (const RowShardArray& a : f.arrays()) {
      const auto it = arrays.find(a.name());
      if (it == arrays.end() || !seen.insert(a.name()).second)
        throw FormatError(str(where, "array '", a.name(), "' is not in shard_files[0] or is repeated"));
      const RowShardArray& a0 = *it->second;
      if (!std::equal(a.global_shape().begin(), a.global_shape().end(), a0.global_shape().begin(),
                      a0.global_shape().end()) ||
          a.optimizer() != a0.optimizer())
        throw FormatError(str(where, "array '", a.name(), "' has another global shape or kind than in shard_files[0]"));
      int64_t& expect = next_row[a.name()];
      if (a.row_begin() != expect || a.row_end() < a.row_begin() || a.row_end() > a0.global_shape(0))
        throw FormatError(str(where, "array '", a.name(), "': rows ", a.row_begin(), "..", a.row_end(),
                              " do not continue at row ", expect, " inside ", a0.global_shape(0), " rows"));
      expect = a.row_end();
    }
  }
  for (const auto& [name, end] : next_row)
    if (end != arrays.at(name)->global_shape(0))
      throw FormatError(str(source, ": array '", name, "': the shard files hold rows 0..", end, " of ",
                            arrays.at(name)->global_shape(0)));
}

void verify_row_shard_files(const std::string& prefix, const CheckpointMeta& meta, const std::string& meta_file,
                            bool crc, const SafetensorsLimits& limits) {
  validate_row_shards(meta, meta_file);
  const std::string dir = dir_of(prefix);
  for (const RowShardFile& rec : meta.shard_files()) {
    const std::string path = (std::filesystem::path(dir) / rec.name()).string();
    if (crc) {
      open_checked(path, rec, meta_file, true, limits);
      continue;
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw FormatError(str(path, ": shard file of rank ", rec.rank(), " (of ", rec.world_size(), ") is missing; ",
                            meta_file, " records it"));
    if (static_cast<uint64_t>(st.st_size) != rec.size_bytes())
      throw FormatError(str(path, ": ", st.st_size, " bytes, but ", meta_file, " records ", rec.size_bytes(),
                            " (the file changed after the checkpoint was written)"));
  }
}

std::vector<RowShardedArrayLayout> row_sharded_arrays(const CheckpointMeta& meta) {
  std::map<std::string, RowShardedArrayLayout> by_name;
  for (const RowShardFile& f : meta.shard_files())
    for (const RowShardArray& a : f.arrays()) {
      RowShardedArrayLayout& l = by_name[a.name()];
      if (l.name.empty()) {
        l.name = a.name();
        l.global_shape.assign(a.global_shape().begin(), a.global_shape().end());
        l.optimizer = a.optimizer();
      }
      l.parts.push_back({f.name(), f.rank(), {a.row_begin(), a.row_end()}});
    }
  std::vector<RowShardedArrayLayout> out;
  for (auto& [name, l] : by_name) out.push_back(std::move(l));
  return out;
}

RowShardReader::RowShardReader(std::string prefix, CheckpointMeta meta, RowShardReadOptions options)
    : prefix_(std::move(prefix)), meta_(std::move(meta)), options_(options) {
  validate_row_shards(meta_, meta_path(prefix_));
  layouts_ = row_sharded_arrays(meta_);
}

RowShardReader::RowShardReader(const LoadedCheckpoint& ck, RowShardReadOptions options)
    : RowShardReader(ck.prefix, ck.meta, options) {}

RowShardReader::~RowShardReader() = default;
RowShardReader::RowShardReader(RowShardReader&&) noexcept = default;
RowShardReader& RowShardReader::operator=(RowShardReader&&) noexcept = default;

const RowShardedArrayLayout* RowShardReader::find(std::string_view name) const {
  const auto it = std::lower_bound(layouts_.begin(), layouts_.end(), name,
                                   [](const RowShardedArrayLayout& l, std::string_view n) { return l.name < n; });
  return it != layouts_.end() && it->name == name ? &*it : nullptr;
}

const RowShardedArrayLayout& RowShardReader::at(std::string_view name) const {
  const RowShardedArrayLayout* l = find(name);
  if (!l) throw Error(str(meta_path(prefix_), ": no row-partitioned array '", name, "'"));
  return *l;
}

const SafetensorsFile& RowShardReader::open_file(size_t index) {
  if (auto it = open_.find(index); it != open_.end()) return it->second;
  const RowShardFile& rec = meta_.shard_files(static_cast<int>(index));
  const std::string path = (std::filesystem::path(dir_of(prefix_)) / rec.name()).string();
  return open_.emplace(index, open_checked(path, rec, meta_path(prefix_), options_.verify, options_.limits)).first->second;
}

void RowShardReader::read_rows(std::string_view name, int64_t begin, int64_t end, float* dst, size_t count) {
  const RowShardedArrayLayout& l = at(name);
  const int64_t rows = l.global_shape[0];
  const uint64_t cols = row_elements(l.global_shape);
  FASTNN_CHECK(0 <= begin && begin <= end && end <= rows, "read rows ", begin, "..", end, " of '", name, "': outside ",
               rows, " rows");
  FASTNN_CHECK(count == static_cast<uint64_t>(end - begin) * cols, "read rows ", begin, "..", end, " of '", name,
               "': destination holds ", count, " floats, needs ", static_cast<uint64_t>(end - begin) * cols);
  for (const auto& part : l.parts) {
    const int64_t b = std::max(begin, part.rows.begin), e = std::min(end, part.rows.end);
    if (b >= e) continue;
    const ArrayView& v = open_file(static_cast<size_t>(part.rank)).at(name);
    const uint64_t from = static_cast<uint64_t>(b - part.rows.begin) * cols * sizeof(float);
    const uint64_t bytes = static_cast<uint64_t>(e - b) * cols * sizeof(float);
    std::memcpy(dst + static_cast<uint64_t>(b - begin) * cols, v.bytes.data() + from, bytes);
  }
}

std::vector<float> RowShardReader::read_rows(std::string_view name, int64_t begin, int64_t end) {
  const RowShardedArrayLayout& l = at(name);
  FASTNN_CHECK(0 <= begin && begin <= end && end <= l.global_shape[0], "read rows ", begin, "..", end, " of '", name,
               "': outside ", l.global_shape[0], " rows");
  const uint64_t n = static_cast<uint64_t>(end - begin) * row_elements(l.global_shape);
  if (n * sizeof(float) > options_.max_read_bytes)
    throw Error(str("read rows ", begin, "..", end, " of '", name, "': ", n * sizeof(float),
                    " bytes is more than the limit of ", options_.max_read_bytes));
  // Open the overlapping files first: their tensors, checked against the meta, prove the bytes exist
  // before an allocation sized by the (untrusted) meta.
  for (const auto& part : l.parts)
    if (std::max(begin, part.rows.begin) < std::min(end, part.rows.end)) open_file(static_cast<size_t>(part.rank));
  std::vector<float> out(n);
  read_rows(name, begin, end, out.data(), out.size());
  return out;
}

std::vector<float> RowShardReader::read_all(std::string_view name) { return read_rows(name, 0, at(name).global_shape[0]); }

std::vector<std::string> RowShardReader::files_opened() const {
  std::vector<std::string> out;
  for (const auto& [index, f] : open_) out.push_back(meta_.shard_files(static_cast<int>(index)).name());
  return out;
}

std::vector<Array> read_row_sharded_arrays(const LoadedCheckpoint& checkpoint, bool optimizer_state,
                                           RowShardReadOptions options) {
  std::vector<Array> out;
  if (checkpoint.meta.shard_files_size() == 0) return out;
  RowShardReader reader(checkpoint, options);
  for (const RowShardedArrayLayout& l : reader.arrays()) {
    if (l.optimizer && !optimizer_state) continue;
    const std::vector<float> v = reader.read_all(l.name);
    Array a{l.name, DType::kF32, l.global_shape, std::vector<std::byte>(v.size() * sizeof(float))};
    std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace fastnn::checkpoint
