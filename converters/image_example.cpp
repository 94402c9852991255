#include "converters/image_example.h"

#include <algorithm>
#include <cstring>

#include "converters/resize.h"
#include "core/check.h"

namespace fastnn::converters {

namespace {

// The tensorflow.Example wire format (schemas/example.proto) written in one pass, straight into the
// record: the image bytes are copied once. Same bytes as ExampleBuilder (map entries in key order,
// packed int64 lists); image_example_test compares the two.
size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
size_t len_field(size_t n) { return 1 + varint_size(n) + n; }  // tag (field < 16) + length + body
char* put_len(char* p, uint8_t tag, size_t n) {
  *p++ = static_cast<char>(tag);
  return put_varint(p, n);
}

struct Feat {
  const char* key;
  bool is_bytes;
  std::string_view bytes;
  int64_t value;
  size_t list_body() const {  // BytesList / Int64List body
    return is_bytes ? len_field(bytes.size()) : len_field(varint_size(static_cast<uint64_t>(value)));
  }
  size_t feature() const { return len_field(list_body()); }  // Feature body: the one oneof field
  size_t entry() const { return len_field(std::strlen(key)) + len_field(feature()); }
};

}  // namespace

void serialize_image_example(std::string_view encoded, const char* format, int height, int width,
                             int channels, int64_t label, int64_t coarse_label, std::string* out) {
  // Keys in byte order, as protobuf's deterministic map serialization and ExampleBuilder write them.
  Feat f[7];
  size_t n = 0;
  f[n++] = {keys::kChannels, false, {}, channels};
  if (coarse_label >= 0) f[n++] = {keys::kCoarseLabel, false, {}, coarse_label};
  f[n++] = {keys::kLabel, false, {}, label};
  f[n++] = {keys::kImageEncoded, true, encoded, 0};
  f[n++] = {keys::kImageFormat, true, format, 0};
  f[n++] = {keys::kHeight, false, {}, height};
  f[n++] = {keys::kWidth, false, {}, width};
  size_t features = 0;
  for (size_t i = 0; i < n; ++i) features += len_field(f[i].entry());
  out->resize(len_field(features));
  char* p = put_len(out->data(), 0x0A, features);  // Example.features
  for (size_t i = 0; i < n; ++i) {
    const Feat& e = f[i];
    p = put_len(p, 0x0A, e.entry());  // Features.feature map entry
    size_t klen = std::strlen(e.key);
    p = put_len(p, 0x0A, klen);  // entry.key
    std::memcpy(p, e.key, klen);
    p += klen;
    p = put_len(p, 0x12, e.feature());                  // entry.value
    p = put_len(p, e.is_bytes ? 0x0A : 0x1A, e.list_body());  // bytes_list = 1 / int64_list = 3
    if (e.is_bytes) {
      p = put_len(p, 0x0A, e.bytes.size());  // BytesList.value
      if (!e.bytes.empty()) std::memcpy(p, e.bytes.data(), e.bytes.size());
      p += e.bytes.size();
    } else {
      p = put_len(p, 0x0A, varint_size(static_cast<uint64_t>(e.value)));  // packed Int64List.value
      p = put_varint(p, static_cast<uint64_t>(e.value));
    }
  }
  FASTNN_CHECK(p == out->data() + out->size(), "serialize_image_example: size mismatch");
}

ImageInfo check_encoded_image(std::string_view head, std::string_view tail, uint64_t size, const ImageLimits& limits) {
  ImageFormat f = detect_image_format(head);
  if (f == ImageFormat::kUnknown) throw FormatError("not a JPEG or PNG image (unrecognised first bytes)");
  ImageInfo info = read_image_info(head, limits);
  // A JPEG's entropy-coded data never holds FF D9 (an FF there is followed by 00 or a restart
  // marker), so the end-of-image marker near the end means the data was not cut short. PNG ends
  // with the IEND chunk. Some writers append bytes after either; a few KB of slack allows that.
  bool complete;
  if (f == ImageFormat::kJpeg) {
    complete = false;
    for (size_t i = 0; i + 1 < tail.size() && !complete; ++i)
      complete = static_cast<uint8_t>(tail[i]) == 0xFF && static_cast<uint8_t>(tail[i + 1]) == 0xD9;
  } else {
    complete = tail.find("IEND") != std::string_view::npos;
  }
  if (!complete)
    throw FormatError(str(image_format_name(f), " image of ", info.width, "x", info.height, " is truncated: no ",
                          f == ImageFormat::kJpeg ? "end-of-image marker (FF D9)" : "IEND chunk", " in its last ",
                          tail.size(), " of ", size, " bytes"));
  return info;
}

void ImageRecordMaker::make(std::string_view bytes, int64_t label, std::string* record, RecordInfo* info) {
  ImageInfo in = read_image_info(bytes, options_.limits);
  const char* format = image_format_name(in.format);
  const int target = options_.resize_shorter_side;
  if (target <= 0 || std::min(in.width, in.height) <= target) {
    serialize_image_example(bytes, format, in.height, in.width, in.channels, label, -1, record);
    *info = {format, in.height, in.width, in.channels};
    return;
  }
  // Re-encode: decode (JPEG at the smallest DCT scale still covering the target), shrink, JPEG.
  int tw, th;
  shorter_side_size(in.width, in.height, target, &tw, &th);
  const int c = in.channels == 1 ? 1 : 3;
  int dw = in.width, dh = in.height;
  if (in.format == ImageFormat::kJpeg) {
    JpegScale s = choose_jpeg_scale(in.width, in.height, tw, th);
    dw = jpeg_scaled_dim(in.width, s);
    dh = jpeg_scaled_dim(in.height, s);
    decoded_.resize(static_cast<size_t>(dw) * dh * c);
    decode_jpeg_scaled_into(bytes, s, c, decoded_.data(), decoded_.size(), options_.limits);
  } else {
    decoded_.resize(decoded_size(in, c));
    decode_image_into(bytes, c, decoded_.data(), decoded_.size(), options_.limits);
  }
  tw = std::min(tw, dw);
  th = std::min(th, dh);
  resized_.resize(static_cast<size_t>(tw) * th * c);
  resize_area(decoded_.data(), dw, dh, c, resized_.data(), tw, th, &scratch_);
  encoded_ = encode_jpeg(resized_.data(), tw, th, c, options_.jpeg_quality);
  serialize_image_example(encoded_, "jpeg", th, tw, c, label, -1, record);
  *info = {"jpeg", th, tw, c};
}

}  // namespace fastnn::converters
