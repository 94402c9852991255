#include "core/tf_checkpoint/bundle_reader.h"

#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "core/crc32c.h"
#include "core/tf_checkpoint/tf_dtype.h"
#include "schemas/tf_checkpoint.pb.h"

namespace fastnn::tf_checkpoint {
namespace {

constexpr int kMaxShards = 99999;  // five digits in the data files' names
constexpr int kBundleVersion = 1;  // what TensorFlow writes since 2016 (kTensorBundleVersion)

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

}  // namespace

std::string bundle_index_path(const std::string& prefix) { return prefix + ".index"; }

std::string bundle_data_path(const std::string& prefix, int shard, int num_shards) {
  char b[40];
  std::snprintf(b, sizeof b, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + b;
}

std::unique_ptr<BundleReader> BundleReader::open(const std::string& prefix, const TableLimits& limits) {
  std::unique_ptr<BundleReader> r(new BundleReader());
  r->prefix_ = prefix;
  const MappedFile index(bundle_index_path(prefix));
  r->load(index.bytes(), limits);
  for (int s = 0; s < r->num_shards_; ++s) {
    r->files_.emplace_back(bundle_data_path(prefix, s, r->num_shards_));
    r->data_.push_back(r->files_.back().bytes());
  }
  // The index is checked against the data files' sizes once they are known.
  for (size_t i = 0; i < r->tensors_.size(); ++i)
    for (const Location& at : r->where_[i]) r->bytes_at(r->tensors_[i], at);
  return r;
}

std::unique_ptr<BundleReader> BundleReader::parse(std::string_view index, const std::vector<std::string_view>& data,
                                                  const std::string& prefix, const TableLimits& limits) {
  std::unique_ptr<BundleReader> r(new BundleReader());
  r->prefix_ = prefix;
  r->load(index, limits);
  if (data.size() != static_cast<size_t>(r->num_shards_))
    throw FormatError(str(bundle_index_path(prefix), ": the header names ", r->num_shards_, " data files, ", data.size(),
                          " given"));
  r->data_ = data;
  for (size_t i = 0; i < r->tensors_.size(); ++i)
    for (const Location& at : r->where_[i]) r->bytes_at(r->tensors_[i], at);
  return r;
}

void BundleReader::load(std::string_view index_bytes, const TableLimits& limits) {
  verify_checksums_ = limits.verify_checksums;
  const std::string index_name = bundle_index_path(prefix_);
  const Table table = Table::parse(index_bytes, index_name, limits);
  const TableEntry* head = table.find("");
  tensorflow::BundleHeaderProto header;
  if (!head || !parse_message(header, head->value))
    throw FormatError(str(index_name, ": no BundleHeaderProto under the empty key (not a V2 checkpoint index)"));
  if (header.num_shards() < 1 || header.num_shards() > kMaxShards)
    throw FormatError(str(index_name, ": header names ", header.num_shards(), " data files (1 to ", kMaxShards, ")"));
  if (header.endianness() != tensorflow::BundleHeaderProto::LITTLE)
    throw FormatError(str(index_name, ": written on a big-endian machine; only little-endian checkpoints are read"));
  if (header.version().min_consumer() > kBundleVersion)
    throw FormatError(str(index_name, ": format version ", header.version().producer(), " needs a reader of version ",
                          header.version().min_consumer(), " or later; this one reads version ", kBundleVersion));
  num_shards_ = header.num_shards();

  // Tensors are the entries whose keys are names; a partitioned tensor's slices lie under keys that
  // begin with OrderedCode's 0 (a zero byte), which no variable name does.
  auto location = [&](const tensorflow::BundleEntryProto& e, const std::string& where) {
    if (e.shard_id() < 0 || e.shard_id() >= num_shards_ || e.offset() < 0 || e.size() < 0)
      throw FormatError(str(where, ": data file ", e.shard_id(), " of ", num_shards_, ", offset ", e.offset(),
                            ", size ", e.size()));
    return Location{e.shard_id(), static_cast<uint64_t>(e.offset()), static_cast<uint64_t>(e.size()),
                    crc32c_unmask(e.crc32c())};
  };
  auto check_size = [&](int dtype, const std::vector<int64_t>& shape, const Location& at, const std::string& where) {
    const uint64_t want = fixed_size_bytes(dtype, shape, where);
    if (tf_dtype_size(dtype) ? at.size != want : at.size < checkpoint::element_count(shape))
      throw FormatError(str(where, ": ", at.size, " bytes stored for ", checkpoint::shape_string(shape), " of ",
                            tf_dtype_name(dtype), tf_dtype_size(dtype) ? str(" (", want, " bytes)") : std::string()));
  };
  for (const TableEntry& entry : table.entries()) {
    if (entry.key.empty() || entry.key[0] == '\0') continue;
    const std::string where = str(index_name, ": tensor '", entry.key, "' (entry at byte ", entry.offset, ")");
    tensorflow::BundleEntryProto e;
    if (!parse_message(e, entry.value))
      throw FormatError(str(where, ": not a BundleEntryProto"));
    TfTensorInfo info;
    info.name = entry.key;
    info.dtype = e.dtype();
    info.shape = shape_from_proto(e.shape(), where);
    std::vector<Location> at;
    if (e.slices_size() == 0) {
      at.push_back(location(e, where));
      check_size(info.dtype, info.shape, at.back(), where);
      info.stored_bytes = at.back().size;
    } else {
      if (static_cast<size_t>(e.slices_size()) > kMaxSlicesPerTensor)
        throw FormatError(str(where, ": ", e.slices_size(), " slices (at most ", kMaxSlicesPerTensor, ")"));
      for (const auto& sp : e.slices()) info.slices.push_back(slice_from_proto(sp, info.shape, where));
      check_tiling(info.slices, info.shape, where);
      for (const Slice& s : info.slices) {
        const std::string swhere = str(where, ": slice ", slice_string(s));
        const TableEntry* se = table.find(slice_key(info.name, s));
        tensorflow::BundleEntryProto slice_entry;
        if (!se) throw FormatError(str(swhere, ": no entry for it in the index"));
        if (!parse_message(slice_entry, se->value))
          throw FormatError(str(swhere, ": its entry at byte ", se->offset, " is not a BundleEntryProto"));
        const std::vector<int64_t> want = slice_shape(s, info.shape);
        if (slice_entry.dtype() != info.dtype || slice_entry.slices_size() != 0 ||
            shape_from_proto(slice_entry.shape(), swhere) != want)
          throw FormatError(str(swhere, ": its entry holds ", tf_dtype_name(slice_entry.dtype()), " ",
                                checkpoint::shape_string(shape_from_proto(slice_entry.shape(), swhere)), ", the slice is ",
                                tf_dtype_name(info.dtype), " ", checkpoint::shape_string(want)));
        at.push_back(location(slice_entry, swhere));
        check_size(info.dtype, want, at.back(), swhere);
        info.stored_bytes += at.back().size;
      }
    }
    tensors_.push_back(std::move(info));
    where_.push_back(std::move(at));
  }
}

std::string_view BundleReader::bytes_at(const TfTensorInfo& t, const Location& at) const {
  const std::string file = bundle_data_path(prefix_, at.shard, num_shards_);
  const std::string_view d = data_[static_cast<size_t>(at.shard)];
  if (at.offset > d.size() || at.size > d.size() - at.offset)
    throw FormatError(str(file, ": tensor '", t.name, "' at byte ", at.offset, " (", at.size,
                          " bytes) runs past the end of the file (", d.size(), " bytes)"));
  return d.substr(at.offset, at.size);
}

checkpoint::Array BundleReader::read(const std::string& name) const {
  const TfTensorInfo* t = find(name);
  if (!t) throw Error(str(prefix_, ": no tensor named '", name, "'"));
  const auto dtype = tf_to_array_dtype(t->dtype);
  if (!dtype) throw FormatError(str(prefix_, ": tensor '", name, "' is ", tf_dtype_name(t->dtype), ", not a numeric array"));
  const std::vector<Location>& at = where_[static_cast<size_t>(t - tensors_.data())];
  checkpoint::Array a;
  a.name = name;
  a.dtype = *dtype;
  a.shape = t->shape;
  a.bytes.resize(fixed_size_bytes(t->dtype, t->shape, name));  // the data files hold these bytes (checked at open)
  for (size_t i = 0; i < at.size(); ++i) {
    const std::string_view b = bytes_at(*t, at[i]);
    const uint32_t crc = crc32c(b.data(), b.size());
    if (crc != at[i].crc && verify_checksums_)
      throw FormatError(str(bundle_data_path(prefix_, at[i].shard, num_shards_), ": tensor '", name, "'",
                            t->slices.empty() ? std::string() : str(" slice ", slice_string(t->slices[i])), " at byte ",
                            at[i].offset, " (", at[i].size, " bytes): CRC-32C ", hex32(crc), " does not match the stored ",
                            hex32(at[i].crc)));
    const auto* src = reinterpret_cast<const std::byte*>(b.data());
    if (t->slices.empty()) {
      if (!b.empty()) std::memcpy(a.bytes.data(), src, b.size());  // an empty tensor has no buffer to copy to
    }
    else copy_slice(t->slices[i], t->shape, tf_dtype_size(t->dtype), src, a.bytes.data());
  }
  return a;
}

}  // namespace fastnn::tf_checkpoint
