// JPEG through libjpeg-turbo's TurboJPEG API (2.1): header, (scaled) decode, encode.
//
// Handles: one TurboJPEG handle per call, destroyed on return. tjInitDecompress + tjDestroy cost
// about 0.3 µs of CPU, ~3% of decoding even a 32×32 JPEG (bench_image_codec: *_fresh_handle vs
// *_peer_turbojpeg), so per-thread handles would buy nothing measurable, while per-call handles
// carry no state from one call to the next (tjDecompressHeader3 returns from a libjpeg error
// without resetting the decompressor, so a reused handle would need care after every failure).
//
// Warnings: libjpeg reports truncated or corrupt entropy-coded data as warnings and fills in the
// missing pixels; TurboJPEG then "succeeds" with TJERR_WARNING. We decode with TJFLAG_STOPONWARNING
// and treat every warning as a FormatError, so a cut-off or damaged file is never silently half
// gray. TJFLAG_LIMITSCANS refuses progressive files with more than 500 scans (a CPU-exhaustion trick).
#include <turbojpeg.h>

#include <climits>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/image.h"
#include "core/image_codecs.h"

namespace fastnn {
namespace {

class TjHandle {
 public:
  explicit TjHandle(bool compress) : h_(compress ? tjInitCompress() : tjInitDecompress()) {
    if (!h_) throw Error(str("TurboJPEG: cannot create a handle: ", tjGetErrorStr2(nullptr)));
  }
  ~TjHandle() { tjDestroy(h_); }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
  tjhandle get() const { return h_; }

  template <typename E>
  [[noreturn]] void fail(const char* what) const {
    const bool warning = tjGetErrorCode(h_) == TJERR_WARNING;
    throw E(str(what, warning ? " (libjpeg warning, treated as an error): " : ": ", tjGetErrorStr2(h_)));
  }

 private:
  tjhandle h_;
};

struct JpegHeader {
  int width = 0;
  int height = 0;
  int colorspace = -1;  // TJCS_*
};

JpegHeader read_header(const TjHandle& t, std::string_view bytes) {
  tjhandle h = t.get();
  int w = 0, ht = 0, subsamp = -2, cs = -2;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (tjDecompressHeader3(h, data, bytes.size(), &w, &ht, &subsamp, &cs) != 0) {
    // TurboJPEG 2.1 refuses sampling factors outside its TJSAMP_* list here although tjDecompress2
    // decodes them. That complaint comes after the header was parsed and the outputs were filled,
    // with no libjpeg error or warning; every other failure leaves the outputs unset.
    const bool only_subsampling =
        subsamp == -1 && w > 0 && ht > 0 && cs >= 0 && tjGetErrorCode(h) == TJERR_FATAL;
    if (!only_subsampling) t.fail<FormatError>("JPEG header");
  }
  return {w, ht, cs};
}

bool is_cmyk(int colorspace) { return colorspace == TJCS_CMYK || colorspace == TJCS_YCCK; }

// Everything but grayscale decodes to RGB; CMYK/YCCK are converted to RGB by us (below).
int stored_channels(int colorspace) { return colorspace == TJCS_GRAY ? 1 : 3; }

// TurboJPEG 2.1 cannot convert CMYK to RGB. Its CMYK convention (that of Adobe files, where the
// stored value is 255 minus the ink) gives R = C·K/255, G = M·K/255, B = Y·K/255: the same formula
// libjpeg-turbo's own tools use. No ICC colour management.
inline uint8_t cmyk_mul(uint32_t v, uint32_t k) { return static_cast<uint8_t>((v * k + 127) / 255); }

void cmyk_to(const uint8_t* src, uint8_t* dst, int dst_channels, size_t n) {
  for (size_t i = 0; i < n; ++i, src += 4, dst += dst_channels) {
    const uint8_t r = cmyk_mul(src[0], src[3]), g = cmyk_mul(src[1], src[3]), b = cmyk_mul(src[2], src[3]);
    if (dst_channels == 1) {
      dst[0] = image_detail::rgb_to_gray(r, g, b);
      continue;
    }
    dst[0] = r;
    dst[1] = g;
    dst[2] = b;
    if (dst_channels == 4) dst[3] = 255;
  }
}

bool is_supported(JpegScale s) {
  if (s.num <= 0 || s.denom <= 0) return false;
  int n = 0;
  const tjscalingfactor* sf = tjGetScalingFactors(&n);
  for (int i = 0; sf && i < n; ++i)
    if (int64_t{s.num} * sf[i].denom == int64_t{sf[i].num} * s.denom) return true;
  return false;
}

}  // namespace

namespace image_detail {

ImageInfo jpeg_read_info(std::string_view bytes, const ImageLimits& limits) {
  const JpegHeader hdr = read_header(TjHandle(/*compress=*/false), bytes);
  check_limits("JPEG", hdr.width, hdr.height, limits);
  return {ImageFormat::kJpeg, hdr.width, hdr.height, stored_channels(hdr.colorspace)};
}

}  // namespace image_detail

JpegScale choose_jpeg_scale(int width, int height, int min_width, int min_height) {
  JpegScale best{1, 1};
  int n = 0;
  const tjscalingfactor* sf = tjGetScalingFactors(&n);
  for (int i = 0; sf && i < n; ++i) {
    const JpegScale s{sf[i].num, sf[i].denom};
    if (s.num > s.denom) continue;  // never upscale
    if (jpeg_scaled_dim(width, s) < min_width || jpeg_scaled_dim(height, s) < min_height) continue;
    if (int64_t{s.num} * best.denom < int64_t{best.num} * s.denom) best = s;
  }
  return best;
}

int jpeg_scaled_dim(int dim, JpegScale s) {
  FASTNN_CHECK(dim >= 0 && s.num > 0 && s.denom > 0, "jpeg_scaled_dim(", dim, ", ", s.num, "/", s.denom, ")");
  const int64_t scaled = (int64_t{dim} * s.num + s.denom - 1) / s.denom;
  FASTNN_CHECK(scaled <= INT_MAX, "jpeg_scaled_dim(", dim, ", ", s.num, "/", s.denom, ") overflows");
  return static_cast<int>(scaled);
}

ImageInfo decode_jpeg_scaled_into(std::string_view bytes, JpegScale scale, int desired_channels,
                                  uint8_t* out, size_t out_size, const ImageLimits& limits) {
  FASTNN_CHECK(is_supported(scale), "JPEG scale ", scale.num, "/", scale.denom,
               " is not one of TurboJPEG's scaling factors");
  if (detect_image_format(bytes) != ImageFormat::kJpeg)
    throw FormatError(str("not a JPEG (", bytes.size(), " bytes, no FF D8 FF signature)"));
  const TjHandle t(/*compress=*/false);
  const JpegHeader hdr = read_header(t, bytes);
  // The limit applies to the full image: libjpeg entropy-decodes all of it (and buffers all of a
  // progressive file's coefficients) whatever the output scale.
  image_detail::check_limits("JPEG", hdr.width, hdr.height, limits);
  const int stored = stored_channels(hdr.colorspace);
  const int c = image_detail::resolve_channels(desired_channels, stored);
  const int sw = jpeg_scaled_dim(hdr.width, scale), sh = jpeg_scaled_dim(hdr.height, scale);
  const size_t pixels = static_cast<size_t>(sw) * static_cast<size_t>(sh);
  FASTNN_CHECK(out != nullptr && out_size >= pixels * c, "JPEG decode: output buffer holds ", out_size,
               " bytes, the ", sw, "x", sh, "x", c, " image needs ", pixels * c);

  tjhandle h = t.get();
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  if (!is_cmyk(hdr.colorspace)) {
    const int pf = c == 1 ? TJPF_GRAY : c == 3 ? TJPF_RGB : TJPF_RGBA;
    if (tjDecompress2(h, data, bytes.size(), out, sw, sw * c, sh, pf, flags) != 0) t.fail<FormatError>("JPEG decode");
  } else if (c == 4) {  // same size per pixel: convert in place
    if (tjDecompress2(h, data, bytes.size(), out, sw, sw * 4, sh, TJPF_CMYK, flags) != 0)
      t.fail<FormatError>("JPEG decode (CMYK)");
    cmyk_to(out, out, 4, pixels);
  } else {
    std::vector<uint8_t> cmyk(pixels * 4);
    if (tjDecompress2(h, data, bytes.size(), cmyk.data(), sw, sw * 4, sh, TJPF_CMYK, flags) != 0)
      t.fail<FormatError>("JPEG decode (CMYK)");
    cmyk_to(cmyk.data(), out, c, pixels);
  }
  return {ImageFormat::kJpeg, sw, sh, stored};
}

std::string encode_jpeg(const uint8_t* pixels, int width, int height, int channels, int quality) {
  FASTNN_CHECK(pixels != nullptr && width > 0 && height > 0, "encode_jpeg: bad image ", width, "x", height);
  FASTNN_CHECK(channels == 1 || channels == 3, "encode_jpeg: channels must be 1 or 3, got ", channels);
  FASTNN_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality must be 1..100, got ", quality);
  const TjHandle t(/*compress=*/true);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  // 4:2:0 chroma (the common default of libjpeg, PIL and TensorFlow); the accurate integer DCT,
  // which TurboJPEG otherwise only uses from quality 96 up.
  const int rc = tjCompress2(t.get(), pixels, width, 0, height, channels == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size,
                             channels == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, TJFLAG_ACCURATEDCT);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(buf, tjFree);
  if (rc != 0) t.fail<Error>("JPEG encode");
  return std::string(reinterpret_cast<const char*>(buf), size);
}

}  // namespace fastnn
