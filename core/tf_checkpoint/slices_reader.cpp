#include "core/tf_checkpoint/slices_reader.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/check.h"
#include "core/tf_checkpoint/tf_dtype.h"
#include "schemas/tf_checkpoint.pb.h"

namespace fastnn::tf_checkpoint {
namespace {

template <typename Field>
void copy_values(const Field& values, size_t element_size, std::byte* dst) {
  // The repeated field's elements are at least as wide as the dtype (int_val for uint8, half_val for
  // half): each value is narrowed to its low bytes, as TensorFlow's restore does.
  for (int i = 0; i < values.size(); ++i) {
    const auto v = values.Get(i);
    std::memcpy(dst + static_cast<size_t>(i) * element_size, &v, element_size);
  }
}

// The slice's values as bytes of its dtype into `dst` (`count` elements); false when the TensorProto holds
// another number of values or none of the dtype's fields.
bool slice_values(const tensorflow::TensorProto& t, int dtype, uint64_t count, std::byte* dst) {
  using namespace tensorflow;
  const size_t size = tf_dtype_size(dtype);
  if (!t.tensor_content().empty()) {
    if (t.tensor_content().size() != count * size) return false;
    std::memcpy(dst, t.tensor_content().data(), t.tensor_content().size());
    return true;
  }
  auto take = [&](const auto& field) {
    if (static_cast<uint64_t>(field.size()) != count) return false;
    copy_values(field, size, dst);
    return true;
  };
  switch (dtype) {  // the dtypes tf_to_array_dtype reads; bfloat16 has only tensor_content
    case DT_FLOAT: return take(t.float_val());
    case DT_INT32: case DT_UINT8: return take(t.int_val());
    case DT_INT64: return take(t.int64_val());
    case DT_HALF: return take(t.half_val());
    default: return count == 0;
  }
}

}  // namespace

std::unique_ptr<SlicesReader> SlicesReader::open(const std::vector<std::string>& files, const TableLimits& limits) {
  std::unique_ptr<SlicesReader> r(new SlicesReader());
  for (const std::string& f : files) r->files_.emplace_back(f);
  for (const MappedFile& f : r->files_) r->add_file(f.bytes(), f.path(), limits);
  r->finish();
  return r;
}

std::unique_ptr<SlicesReader> SlicesReader::parse(const std::vector<std::pair<std::string, std::string_view>>& files,
                                                  const TableLimits& limits) {
  std::unique_ptr<SlicesReader> r(new SlicesReader());
  for (const auto& [name, bytes] : files) r->add_file(bytes, name, limits);
  r->finish();
  return r;
}

void SlicesReader::add_file(std::string_view bytes, const std::string& name, const TableLimits& limits) {
  tables_.push_back(Table::parse(bytes, name, limits));
  const Table& table = tables_.back();
  const size_t ti = tables_.size() - 1;
  const TableEntry* head = table.find("");
  tensorflow::SavedTensorSlices sts;
  if (!head || !parse_message(sts, head->value) || !sts.has_meta())
    throw FormatError(str(name, ": no SavedTensorSlices meta under the empty key (not a V1 checkpoint)"));
  if (sts.meta().versions().min_consumer() > 1)
    throw FormatError(str(name, ": checkpoint version ", sts.meta().versions().producer(),
                          " needs a newer reader (min_consumer ", sts.meta().versions().min_consumer(), ")"));
  for (const tensorflow::SavedSliceMeta& m : sts.meta().tensor()) {
    const std::string where = str(name, ": tensor '", m.name(), "' (meta at byte ", head->offset, ")");
    if (m.name().empty()) throw FormatError(str(where, ": a tensor without a name"));
    std::vector<int64_t> shape = shape_from_proto(m.shape(), where);
    fixed_size_bytes(m.type(), shape, where);
    auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const TfTensorInfo& t) { return t.name == m.name(); });
    if (it == tensors_.end()) {
      tensors_.push_back({m.name(), m.type(), std::move(shape), 0, {}});
      where_.emplace_back();
      it = tensors_.end() - 1;
    } else if (it->dtype != m.type() || it->shape != shape) {
      throw FormatError(str(where, ": ", tf_dtype_name(m.type()), " ", checkpoint::shape_string(shape), " here, ",
                            tf_dtype_name(it->dtype), " ", checkpoint::shape_string(it->shape), " in an earlier file"));
    }
    std::vector<SliceEntry>& at = where_[static_cast<size_t>(it - tensors_.begin())];
    for (const auto& sp : m.slice()) {
      if (it->slices.size() >= kMaxSlicesPerTensor)
        throw FormatError(str(where, ": more than ", kMaxSlicesPerTensor, " slices"));
      Slice s = slice_from_proto(sp, it->shape, where);
      const TableEntry* e = table.find(slice_key(it->name, s));
      if (!e) throw FormatError(str(where, ": slice ", slice_string(s), " has no entry in the file"));
      // Every encoding of a value takes a byte at least: this bounds what read() allocates by the file.
      const uint64_t count = checkpoint::element_count(slice_shape(s, it->shape));
      if (e->value.size() < count)
        throw FormatError(str(where, ": slice ", slice_string(s), " at byte ", e->offset, " is ", e->value.size(),
                              " bytes, too few for its ", count, " values"));
      it->slices.push_back(s);
      it->stored_bytes += e->value.size();
      at.push_back({ti, e, std::move(s)});
    }
  }
}

void SlicesReader::finish() {
  std::vector<size_t> order(tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].name < tensors_[b].name; });
  std::vector<TfTensorInfo> tensors;
  std::vector<std::vector<SliceEntry>> where;
  for (size_t i : order) {
    TfTensorInfo& t = tensors_[i];
    const std::string where_text = str(tables_.front().name(), ": tensor '", t.name, "'");
    check_tiling(t.slices, t.shape, where_text);
    if (t.slices.size() == 1) t.slices.clear();  // one slice covering the tensor: stored whole
    tensors.push_back(std::move(t));
    where.push_back(std::move(where_[i]));
  }
  tensors_ = std::move(tensors);
  where_ = std::move(where);
}

checkpoint::Array SlicesReader::read(const std::string& name) const {
  const TfTensorInfo* t = find(name);
  if (!t) throw Error(str(tables_.front().name(), ": no tensor named '", name, "'"));
  const auto dtype = tf_to_array_dtype(t->dtype);
  if (!dtype)
    throw FormatError(str(tables_.front().name(), ": tensor '", name, "' is ", tf_dtype_name(t->dtype),
                          ", not a numeric array"));
  checkpoint::Array a;
  a.name = name;
  a.dtype = *dtype;
  a.shape = t->shape;
  // At most 8 bytes per byte of the slices' entries (open() checked a byte per value at least).
  a.bytes.resize(fixed_size_bytes(t->dtype, t->shape, name));
  const size_t element_size = tf_dtype_size(t->dtype);
  const std::vector<SliceEntry>& at = where_[static_cast<size_t>(t - tensors_.data())];
  std::vector<std::byte> buffer;
  for (size_t i = 0; i < at.size(); ++i) {
    const Slice& s = at[i].slice;
    const TableEntry& e = *at[i].entry;
    const std::string where = str(tables_[at[i].table].name(), ": tensor '", name, "' slice ", slice_string(s),
                                  " at byte ", e.offset);
    tensorflow::SavedTensorSlices sts;
    if (!parse_message(sts, e.value) || !sts.has_data())
      throw FormatError(str(where, ": not a SavedTensorSlices with data"));
    const tensorflow::SavedSlice& d = sts.data();
    if (d.name() != name) throw FormatError(str(where, ": holds tensor '", d.name(), "'"));
    const Slice held = slice_from_proto(d.slice(), t->shape, where);
    auto same = [](const Extent& x, const Extent& y) { return x.start == y.start && x.length == y.length; };
    if (!std::equal(held.begin(), held.end(), s.begin(), s.end(), same))
      throw FormatError(str(where, ": holds slice ", slice_string(held)));
    const uint64_t count = checkpoint::element_count(slice_shape(s, t->shape));
    const bool whole = at.size() == 1;
    if (!whole) buffer.resize(count * element_size);
    if (!slice_values(d.data(), t->dtype, count, whole ? a.bytes.data() : buffer.data()))
      throw FormatError(str(where, ": its values are not ", count, " ", tf_dtype_name(t->dtype), " values"));
    if (!whole) copy_slice(s, t->shape, element_size, buffer.data(), a.bytes.data());
  }
  return a;
}

}  // namespace fastnn::tf_checkpoint
