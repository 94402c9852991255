// safetensors reader: one read-only mapping, then validation of the header against the buffer.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "core/input_file.h"
#include "core/safetensors.h"

namespace fastnn::checkpoint {
namespace {

using nlohmann::json;

// {name: {dtype, shape, data_offsets}} and {"__metadata__": {k: v}}: nothing deeper is valid, and a
// bound keeps a hostile header ("[[[[...") from building a deep document.
constexpr int kMaxDepth = 3;

uint64_t get_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string known_dtypes() { return "F32, F16, BF16, I32, I64, U8"; }

// A non-negative JSON integer that fits int64; nullopt otherwise (negative, fractional, too large).
std::optional<uint64_t> as_index(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) return u;
  } else if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(v.get<int64_t>());
  }
  return std::nullopt;
}

// Parses the header, rejecting duplicate keys (nlohmann keeps the last silently; a file with two
// "w" entries is ambiguous, so it is invalid) and excessive nesting.
json parse_header(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> keys;
  auto cb = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    if (depth > kMaxDepth) throw FormatError(str(file, ": header JSON nests deeper than ", kMaxDepth, " levels"));
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second) throw FormatError(str(file, ": header JSON has the key '", k, "' twice"));
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::parse_error& e) {
    throw FormatError(str(file, ": header is not valid JSON (at header byte ", e.byte, "): ", e.what()));
  } catch (const json::exception& e) {  // e.g. out_of_range.406: a number too large for a double
    throw FormatError(str(file, ": header JSON is unusable: ", e.what()));
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::parse(std::string_view bytes, std::string name, const SafetensorsLimits& limits) {
  SafetensorsFile f;
  f.name_ = std::move(name);
  f.bytes_ = bytes;
  f.validate(limits);
  return f;
}

SafetensorsFile SafetensorsFile::open(const std::string& path, const SafetensorsLimits& limits) {
  SafetensorsFile f;
  f.name_ = path;
  const int fd = open_regular_file(path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw_io_error(path, "stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(str(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw_io_error(path, "mmap");
    }
    ::madvise(p, size, MADV_SEQUENTIAL);  // a hint: checksum and copy-out both read front to back
    f.map_ = p;
    f.map_size_ = size;
    f.bytes_ = std::string_view(static_cast<const char*>(p), size);
  }
  ::close(fd);  // the mapping keeps the file
  f.validate(limits);
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept { *this = std::move(o); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, map_size_);
    name_ = std::move(o.name_);
    bytes_ = o.bytes_;
    map_ = o.map_;
    map_size_ = o.map_size_;
    arrays_ = std::move(o.arrays_);
    metadata_ = std::move(o.metadata_);
    o.map_ = nullptr;
    o.map_size_ = 0;
    o.bytes_ = {};
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_size_);
}

const ArrayView* SafetensorsFile::find(std::string_view name) const {
  // arrays_ is sorted by name (validate()), so a model of ~1000 arrays finds each in log time.
  const auto it = std::lower_bound(arrays_.begin(), arrays_.end(), name,
                                   [](const ArrayView& a, std::string_view n) { return a.name < n; });
  return it != arrays_.end() && it->name == name ? &*it : nullptr;
}

const ArrayView& SafetensorsFile::at(std::string_view name) const {
  if (const ArrayView* a = find(name)) return *a;
  throw FormatError(str(name_, ": no tensor named '", name, "'"));
}

void SafetensorsFile::validate(const SafetensorsLimits& limits) {
  const std::string& file = name_;
  if (bytes_.size() < 8)
    throw FormatError(str(file, ": file is ", bytes_.size(), " bytes, too short for the 8-byte header length"));
  const uint64_t n = get_le64(bytes_.data());
  if (n > limits.max_header_bytes)
    throw FormatError(str(file, ": header length ", n, " exceeds the limit of ", limits.max_header_bytes, " bytes"));
  if (n > bytes_.size() - 8)
    throw FormatError(str(file, ": header length ", n, " runs past the end of the file (", bytes_.size(),
                          " bytes): truncated or not a safetensors file"));
  const json header = parse_header(bytes_.substr(8, n), file);
  if (!header.is_object()) throw FormatError(str(file, ": header JSON is a ", header.type_name(), ", not an object"));

  const uint64_t buffer_size = bytes_.size() - 8 - n;
  const std::byte* buffer = reinterpret_cast<const std::byte*>(bytes_.data() + 8 + n);
  struct Span {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Span> spans;
  arrays_.clear();
  metadata_.clear();
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw FormatError(str(file, ": __metadata__ is not an object"));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw FormatError(str(file, ": __metadata__ value of '", mk, "' is not a string"));
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = str(file, ": tensor '", key, "'");
    if (!value.is_object()) throw FormatError(str(where, ": entry is a ", value.type_name(), ", not an object"));
    for (const auto& [field, unused] : value.items())
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        throw FormatError(str(where, ": unknown field '", field, "' (expected dtype, shape, data_offsets)"));
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!value.contains(field)) throw FormatError(str(where, ": missing field '", field, "'"));

    const json& jd = value["dtype"];
    if (!jd.is_string()) throw FormatError(str(where, ": dtype is not a string"));
    const auto dtype = parse_safetensors_dtype(jd.get<std::string>());
    if (!dtype)
      throw FormatError(str(where, ": unsupported dtype '", jd.get<std::string>(), "' (supported: ", known_dtypes(), ")"));

    const json& js = value["shape"];
    if (!js.is_array()) throw FormatError(str(where, ": shape is not a list"));
    if (js.size() > kMaxRank) throw FormatError(str(where, ": shape has rank ", js.size(), " > ", kMaxRank));
    std::vector<int64_t> shape;
    for (const auto& d : js) {
      const auto v = as_index(d);
      if (!v) throw FormatError(str(where, ": shape entry ", d.dump(), " is not a non-negative integer"));
      shape.push_back(static_cast<int64_t>(*v));
    }
    uint64_t count;
    try {
      count = element_count(shape);
    } catch (const FormatError& e) {
      throw FormatError(str(where, ": ", e.what()));
    }

    const json& jo = value["data_offsets"];
    if (!jo.is_array() || jo.size() != 2) throw FormatError(str(where, ": data_offsets is not a list of two offsets"));
    const auto begin = as_index(jo[0]), end = as_index(jo[1]);
    if (!begin || !end) throw FormatError(str(where, ": data_offsets ", jo.dump(), " are not non-negative integers"));
    if (*begin > *end) throw FormatError(str(where, ": data_offsets ", jo.dump(), " end before they begin"));
    if (*end > buffer_size)
      throw FormatError(str(where, ": data_offsets ", jo.dump(), " run past the end of the data buffer (", buffer_size,
                            " bytes): truncated file?"));
    // count <= span length first, so the product cannot overflow (span length < file size).
    const uint64_t span = *end - *begin;
    if (count > span || count * dtype_size(*dtype) != span)
      throw FormatError(str(where, ": shape ", shape_string(shape), " (", count, " elements of ", safetensors_dtype_name(*dtype),
                            ", ", dtype_size(*dtype), " bytes each) does not match data_offsets ", jo.dump(), " (",
                            span, " bytes)"));
    spans.push_back({*begin, *end, arrays_.size()});
    arrays_.push_back({key, *dtype, std::move(shape), {buffer + *begin, static_cast<size_t>(*end - *begin)}});
  }

  // The spec: sorted by offset, the tensors tile the buffer exactly.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t expected = 0;
  const Span* prev = nullptr;
  for (const Span& s : spans) {
    const std::string& nm = arrays_[s.index].name;
    if (s.begin < expected)
      throw FormatError(str(file, ": tensor '", nm, "' data_offsets [", s.begin, ", ", s.end, "] overlap tensor '",
                            arrays_[prev->index].name, "' [", prev->begin, ", ", prev->end, "]"));
    if (s.begin > expected)
      throw FormatError(str(file, ": bytes [", expected, ", ", s.begin, ") of the data buffer belong to no tensor (before '",
                            nm, "')"));
    expected = s.end;
    prev = &s;
  }
  if (expected != buffer_size)
    throw FormatError(str(file, ": data buffer is ", buffer_size, " bytes but the tensors cover ", expected,
                          " (trailing bytes)"));
  // nlohmann's objects iterate in key order already; sorting again makes find()'s invariant local.
  std::sort(arrays_.begin(), arrays_.end(), [](const ArrayView& a, const ArrayView& b) { return a.name < b.name; });
}

}  // namespace fastnn::checkpoint
