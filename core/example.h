// tf.train.Example without libprotobuf on the hot path.
//
// ExampleBuilder writes the wire format of tensorflow.Example (schemas/example.proto) directly, keys in
// sorted order so the bytes are deterministic; libprotobuf parses them to the same message.
// ExampleParser finds the features asked for and returns views into the record buffer: no map, no
// string copies, no allocation. Both accept everything the schema allows (packed and unpacked
// repeated scalars, fields in any order, unknown fields skipped, a key repeated: last one wins, as in
// protobuf map semantics). Malformed bytes throw FormatError; nothing read from the record is trusted
// to size an allocation.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fastnn {

class ExampleBuilder {
 public:
  ExampleBuilder& add_bytes(std::string key, std::string_view value);
  ExampleBuilder& add_bytes_list(std::string key, std::span<const std::string_view> values);
  ExampleBuilder& add_int64(std::string key, int64_t value);
  ExampleBuilder& add_int64_list(std::string key, std::span<const int64_t> values);
  ExampleBuilder& add_float(std::string key, float value);
  ExampleBuilder& add_float_list(std::string key, std::span<const float> values);

  // Serialized tensorflow.Example. The builder can be reused after clear().
  std::string serialize() const;
  void serialize_to(std::string* out) const;  // replaces *out's contents, reusing its capacity
  void clear();

  // Keys must be valid UTF-8 (a proto3 string: libprotobuf rejects anything else) and distinct;
  // a key added twice, or an Example that would exceed protobuf's 2 GiB limit, throws Error.
  // The bytes equal libprotobuf's deterministic serialization of the same message.

 private:
  struct Entry {
    std::string key;
    std::string feature;  // serialized tensorflow.Feature
  };
  std::string* spare_feature();  // the unused slot past size_, for the next feature's bytes
  void commit(std::string key);  // moves that slot to the key's sorted position (checked unique)
  // entries_[0, size_) in key order; the slots beyond keep their capacity across clear().
  std::vector<Entry> entries_;
  size_t size_ = 0;
};

// A feature found in a record. The payload points into the record buffer.
class FeatureView {
 public:
  enum class Kind { kMissing, kBytes, kFloat, kInt64 };

  Kind kind() const { return kind_; }
  bool present() const { return kind_ != Kind::kMissing; }

  // Number of values (walks the list; O(n) for bytes and unpacked scalars).
  size_t size() const;
  // All bytes values / int64 values / float values. Throw FormatError if the kind differs.
  std::vector<std::string_view> bytes_values() const;
  std::vector<int64_t> int64_values() const;
  std::vector<float> float_values() const;
  // The common single-value cases, without allocating: exactly one value required, else FormatError
  // naming `key`.
  std::string_view single_bytes(std::string_view key) const;
  int64_t single_int64(std::string_view key) const;
  float single_float(std::string_view key) const;

  // Internal: the serialized BytesList / FloatList / Int64List message.
  static FeatureView make(Kind kind, std::string_view list) { return FeatureView(kind, list); }
  std::string_view list_bytes() const { return list_; }
  // Internal, for records no writer produces but protobuf allows: a Feature whose list field
  // appears several times (or a map entry whose value appears several times) holds the merge of
  // those lists. Then list_bytes() is only the first part and `entry` the whole map entry, which
  // the accessors walk again.
  static FeatureView make_split(Kind kind, std::string_view first_list, std::string_view entry) {
    FeatureView v(kind, first_list);
    v.split_entry_ = entry;
    return v;
  }
  bool is_split() const { return split_entry_.data() != nullptr; }
  std::string_view split_entry() const { return split_entry_; }

  FeatureView() = default;

 private:
  FeatureView(Kind kind, std::string_view list) : kind_(kind), list_(list) {}
  Kind kind_ = Kind::kMissing;
  std::string_view list_;
  std::string_view split_entry_;  // null unless is_split()
};

class ExampleParser {
 public:
  // The keys to look for; parse() fills one FeatureView per key, in this order.
  explicit ExampleParser(std::vector<std::string> keys);

  // out must have keys().size() elements. Missing keys give kind kMissing (so does a key whose
  // Feature has no list set). The whole record is validated, so parse() throws exactly when
  // libprotobuf's ParseFromArray would fail (invalid UTF-8 in any key included); after a throw the
  // contents of out are unspecified. Thread-safe (const); does not allocate unless it throws.
  void parse(std::string_view record, std::span<FeatureView> out) const;
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  std::vector<std::string> keys_;
  bool distinct_keys_ = true;  // then a matching entry needs no further comparisons
};

// Calls fn(key, view) for every feature of the record, in wire order (for `fastnn inspect`).
// A key that appears twice is reported twice. The record is validated first, so a malformed record
// throws FormatError before fn is called at all.
void for_each_feature(std::string_view record,
                      const std::function<void(std::string_view, const FeatureView&)>& fn);

// The keys fastnn's records carry (../shared/DESIGN.md "Records").
namespace keys {
inline constexpr const char* kImageEncoded = "image/encoded";
inline constexpr const char* kImageFormat = "image/format";
inline constexpr const char* kLabel = "image/class/label";
inline constexpr const char* kCoarseLabel = "image/class/coarse_label";
inline constexpr const char* kHeight = "image/height";
inline constexpr const char* kWidth = "image/width";
inline constexpr const char* kChannels = "image/channels";
}  // namespace keys

}  // namespace fastnn
