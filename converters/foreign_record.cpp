#include "converters/foreign_record.h"

#include <cctype>

#include "core/ascii.h"
#include "core/check.h"

namespace fastnn::converters {
namespace {

// Groups of spellings, in ExampleParser key order.
constexpr const char* kKeys[] = {
    "image/encoded", "image/raw", "image_raw",                     // 0..2 bytes
    "image/format",                                               // 3
    "image/class/label", "image/label", "label",                  // 4..6
    "image/height", "height",                                     // 7..8
    "image/width", "width",                                       // 9..10
    "image/channels", "image/depth", "depth", "channels",         // 11..14
};
constexpr int kNumKeys = sizeof(kKeys) / sizeof(kKeys[0]);
struct Group {
  int first, count;
};
constexpr Group kEncoded{0, 3}, kFormat{3, 1}, kLabel{4, 3}, kHeight{7, 2}, kWidth{9, 2}, kChannels{11, 4};

// Index of the first present key of a group, or -1.
int first_present(const FeatureView* f, Group g) {
  for (int i = g.first; i < g.first + g.count; ++i)
    if (f[i].present()) return i;
  return -1;
}

int64_t optional_int(const FeatureView* f, Group g) {
  const int i = first_present(f, g);
  return i < 0 ? 0 : f[i].single_int64(kKeys[i]);
}

}  // namespace

ForeignRecordParser::ForeignRecordParser(ImageLimits limits)
    : limits_(limits), parser_(std::vector<std::string>(kKeys, kKeys + kNumKeys)) {}

ForeignRecord ForeignRecordParser::parse(std::string_view record) const {
  FeatureView f[kNumKeys];
  parser_.parse(record, f);
  ForeignRecord r;
  const int enc = first_present(f, kEncoded);
  if (enc < 0) throw FormatError("no image bytes (image/encoded, image/raw or image_raw)");
  r.encoded = f[enc].single_bytes(kKeys[enc]);
  const int lab = first_present(f, kLabel);
  if (lab < 0) throw FormatError("no label (image/class/label, image/label or label)");
  r.label = f[lab].single_int64(kKeys[lab]);
  if (f[kFormat.first].present()) r.declared_format = f[kFormat.first].single_bytes(kKeys[kFormat.first]);
  r.record_height = optional_int(f, kHeight);
  r.record_width = optional_int(f, kWidth);
  r.record_channels = optional_int(f, kChannels);

  const std::string declared = ascii_lower(r.declared_format);
  const bool says_jpeg = declared == "jpeg" || declared == "jpg";
  if (!declared.empty() && !says_jpeg && declared != "png" && declared != "raw")
    throw FormatError(str("image/format \"", r.declared_format.substr(0, 32), "\" is not jpeg, jpg, png or raw"));
  const ImageFormat actual = detect_image_format(r.encoded);
  if (actual != ImageFormat::kUnknown && declared != "raw") {
    const ImageInfo info = read_image_info(r.encoded, limits_);
    r.format = image_format_name(actual);
    r.format_mismatch = !declared.empty() && (actual == ImageFormat::kJpeg) != says_jpeg;
    r.height = info.height;
    r.width = info.width;
    r.channels = info.channels;
    return r;
  }
  if (declared == "jpeg" || declared == "jpg" || declared == "png")
    throw FormatError(str("image/format says ", r.declared_format, " but the ", r.encoded.size(),
                          " bytes of the image are not a JPEG or PNG"));
  // Raw pixels: the record gives the size.
  const int64_t h = r.record_height, w = r.record_width;
  if (h < 1 || w < 1 || h > limits_.max_side || w > limits_.max_side || h * w > limits_.max_pixels)
    throw FormatError(str(declared.empty() ? "image bytes that are not JPEG or PNG and " : "raw image with ",
                          "height × width ", h, "x", w, " (missing, or over the limits)"));
  int64_t c = r.record_channels;
  const int64_t n = static_cast<int64_t>(r.encoded.size());
  if (c == 0 && n % (h * w) == 0) c = n / (h * w);
  if (c != 1 && c != 3 && c != 4) throw FormatError(str("raw image ", h, "x", w, " with ", c, " channels (1, 3 or 4)"));
  if (n != h * w * c) throw FormatError(str("raw image ", h, "x", w, "x", c, " needs ", h * w * c, " bytes, has ", n));
  r.format = "raw";
  r.format_mismatch = false;
  r.height = static_cast<int>(h);
  r.width = static_cast<int>(w);
  r.channels = static_cast<int>(c);
  return r;
}

}  // namespace fastnn::converters
